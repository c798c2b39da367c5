import type { Lease } from "../../../src/index.ts";

/** A lease a client received. Times are performance.now() of the one test process. */
export interface Held {
  id: number;
  client: string;
  name: string;
  owner: string;
  fence: number;
  /** The primary the address pointed at when the call was made: a later one never minted it. */
  era: string;
  callStart: number;
  receivedAt: number;
  /** The end of its local validity, cut at its release. */
  end: number;
}

/** A fenced write to the independent store, and how it came back. */
export interface StoreWrite {
  held: Held;
  resource: string;
  sentAt: number;
  repliedAt: number;
  /** "unknown": no answer (the store is not faulted, so this should not happen). */
  outcome: "accepted" | "stale" | "unknown";
}

/** An acquire that failed with an error (LockUnavailableError, ClockBehindError...), not busy. */
export interface Failure {
  callStart: number;
  at: number;
  code: string;
}

/** What one scenario's clients did and saw. */
export class History {
  readonly startedAt = performance.now();
  readonly leases: Held[] = [];
  readonly writes: StoreWrite[] = [];
  readonly failures: Failure[] = [];
  readonly namesTried = new Set<string>();
  /** Faults and other moments worth a line in the log, in ms since the start. */
  readonly events: string[] = [];

  ms(at = performance.now()): number {
    return Math.round(at - this.startedAt);
  }

  note(event: string): number {
    const at = performance.now();
    this.events.push(`${String(this.ms(at)).padStart(6)} ms  ${event}`);
    return at;
  }

  receive(client: string, lease: Lease, era: string, callStart: number): Held {
    const receivedAt = performance.now();
    const { name, owner, fence } = lease;
    const held: Held = { id: this.leases.length + 1, client, name, owner, fence, era, callStart, receivedAt, end: receivedAt + lease.remainingMs() };
    this.leases.push(held);
    return held;
  }

  finish(held: Held): void {
    held.end = Math.min(held.end, performance.now());
  }

  /** Records a failed acquire; returns its error code (the message for an error without one). */
  fail(callStart: number, error: unknown): string {
    const code = error instanceof Error && "code" in error ? String(error.code) : String(error);
    this.failures.push({ callStart, at: performance.now(), code });
    return code;
  }

  /** Whether a holder that got its lease after `held` was received has had a write accepted on `resource`. */
  newerWriteAccepted(held: Held, resource: string): boolean {
    return this.writes.some((write) =>
      write.resource === resource && write.outcome === "accepted" && write.held.owner !== held.owner &&
      write.held.callStart > held.receivedAt);
  }
}
