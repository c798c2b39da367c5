// What a lock set asks of the Redis side, one node or a quorum of them, and what it gets back.

/** A lock's state as anyone may see it; the owner is never revealed. */
export interface LockState {
  held: boolean;
  /** The holder's fence, or the last one minted when free (null if none is remembered). */
  fence: number | null;
  remainingMs: number;
  holds: number;
  /** Callers of acquire() waiting in line. */
  waiters: number;
  /** Quorum mode: each node's own view, in the order the clients were given; null where one failed or did not answer. */
  nodes?: (Omit<LockState, "nodes"> | null)[];
}

/** What identifies a lease: enough to resume, extend or release it. */
export interface HeldLease {
  name: string;
  owner: string;
  fence: number;
}

export type ReleaseOutcome = "released" | "expired";

/** What a busy attempt learned: the holder's remaining TTL and the caller's place in line. */
export interface Busy {
  /** 0 with a position above 0: free, but promised to an earlier waiter; -1: held for this call, but its reply came too late to use. */
  busyForMs: number;
  /** 0 = next in line; -1 = not queued. */
  position: number;
}

/** What a busy attempt learned, including what a handover after it is checked against. */
export interface BusyAttempt extends Busy {
  /** No lower than any fence minted before the attempt ran; a handover with a higher one came after it. */
  readonly newestFence: number;
  /** Above 0: the lock is free, but Redis's clock must catch up with its last fence for this long first. */
  readonly clockBehindMs: number;
}

/** A lock taken: its fence, and the performance.now() deadline it can be trusted until. */
export interface Grant {
  readonly fence: number;
  readonly validUntil: number;
}

/** The Redis side of a lock set: each call one script per node. */
export interface LockBackend {
  /** One attempt to take the lock; `queueMs` > 0 keeps a place in line that long, where there is a line. */
  attempt(name: string, owner: string, ticket: string, leaseMs: number, queueMs: number): Promise<Grant | BusyAttempt>;
  /** Leaves the line, and gives back any hold taken under `ticket` that the caller never received. */
  leave(name: string, ticket: string): Promise<unknown>;
  /** Extends the lease; the new TTL in ms, or null when it is no longer held. */
  heartbeat(lease: HeldLease, leaseMs: number): Promise<number | null>;
  release(lease: HeldLease, requestId: string): Promise<ReleaseOutcome>;
  inspect(name: string): Promise<LockState>;
}

/** Clock drift allowance: a lease is trusted for slightly less than its TTL. */
export function driftMs(leaseMs: number): number {
  return leaseMs * 0.01 + 2;
}
