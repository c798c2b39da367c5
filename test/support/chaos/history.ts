import type { Lease } from "../../../src/index.ts";

/** A lease an actor received, with the interval in which it trusted it (all actors share one clock). */
export interface ReceivedLease {
  id: number;
  actor: number;
  name: string;
  lease: Lease;
  owner: string;
  fence: number;
  /** The call that got it, for the trace: acquire-push, join(L3), resume(L2), ... */
  how: string;
  /** When that call was made: a fence minted for a later call is higher. */
  callStart: number;
  /** From receipt (or a resumed lease's first heartbeat) to its last deadline, cut at release(). */
  start: number;
  end: number;
  /** Released or handed over: no longer its actor's to use. */
  done: boolean;
}

/** A fenced store call and how it came back. */
export interface StoreCall {
  actor: number;
  resource: string;
  /** A claim is the read of a read-modify-write: it claims the fence as a write would. */
  kind: "claim" | "write";
  fence: number;
  /** One per write, so the stored value names the write that stored it. */
  tag?: string;
  /** The count a read-modify-write wrote. */
  n?: number;
  sentAt: number;
  repliedAt: number;
  /** "unknown": no answer, so it may yet be applied. */
  outcome: "ok" | "stale" | "unknown";
  /** The fence a StaleFenceError named. */
  highest?: number;
}

// A loss shortly before a call still has effects in flight (late requests, an owner that has not
// noticed), so a waiver reaches back this far: past anything one call of a run takes.
const LOSS_REACH_MS = 10_000;

/** What a run's actors did and saw, and what they found wrong on the way. */
export class History {
  readonly startedAt = performance.now();
  /** Printed when a run has a violation. */
  readonly trace: string[] = [];
  readonly leases: ReceivedLease[] = [];
  readonly storeCalls: StoreCall[] = [];
  /** Counters whose idle record expired (store ttlMs) and counted from 0 again: their increments cannot be compared. */
  readonly restartedCounters = new Set<string>();
  readonly violations: string[] = [];
  readonly #keyLosses: { name: string; at: number }[] = [];

  /** Milliseconds since the run started, as messages show times. */
  ms(at = performance.now()): number {
    return Math.round(at - this.startedAt);
  }

  record(line: string): void {
    this.trace.push(`${String(this.ms()).padStart(5)} ${line}`);
  }

  violation(message: string): void {
    this.violations.push(message);
  }

  /** Opens a lease's interval; undefined for one that arrived already lapsed. */
  receive(actor: number, lease: Lease, how: string, callStart: number): ReceivedLease | undefined {
    const start = performance.now();
    const remaining = lease.remainingMs();
    if (remaining <= 0) {
      this.record(`a${actor} ${how} ${lease.name} f${lease.fence}: arrived lapsed`);
      return undefined;
    }
    const { name, owner, fence } = lease;
    const held: ReceivedLease = { id: this.leases.length + 1, actor, name, lease, owner, fence, how, callStart, start, end: start + remaining, done: false };
    this.leases.push(held);
    this.record(`a${actor} L${held.id} ${how} ${name} f${fence} o${owner.slice(0, 6)} valid ${Math.round(remaining)} ms`);
    return held;
  }

  /** After a heartbeat: the interval runs to the new deadline. */
  extend(held: ReceivedLease): void {
    const remaining = held.lease.remainingMs();
    if (remaining > 0) held.end = performance.now() + remaining;
  }

  /** Closes a lease's interval now, if it had not lapsed before. */
  finish(held: ReceivedLease): void {
    held.done = true;
    held.end = Math.min(held.end, performance.now());
  }

  keysLost(name: string): void {
    this.#keyLosses.push({ name, at: performance.now() });
  }

  keysEverLost(name: string): boolean {
    return this.#keyLosses.some((loss) => loss.name === name);
  }

  /** Whether keys of `name` were lost from shortly before a call made at `callStart` until `to`. */
  keysLostSinceCall(name: string, callStart: number, to = performance.now()): boolean {
    const from = callStart - LOSS_REACH_MS;
    return this.#keyLosses.some((loss) => loss.name === name && loss.at >= from && loss.at <= to);
  }
}
