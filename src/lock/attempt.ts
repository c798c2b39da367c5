// One attempt to take a lock, and the Redis side of a lease: each one script.
import { Lease, driftMs, type LeaseBackend, type ReleaseOutcome } from "./lease.ts";
import { RETRY_WINDOW_MS, unexpectedReply, type Integers } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
import type { Busy } from "../waiting/backoff.ts";

/**
 * Runs a lock script on the keys of lock `name` (and of the lease with `fence`, when given),
 * keeping `owner` out of any error message.
 */
export type Run = (script: scripts.LuaScript, name: string, args: (string | number)[], owner: string, fence?: number) => Promise<Integers>;

/** What a busy attempt learned, including what a handover after it is checked against. */
export interface BusyAttempt extends Busy {
  /** No lower than any fence minted before the attempt ran; a handover with a higher one came after it. */
  readonly newestFence: number;
  /** Above 0: the lock is free, but Redis's clock must catch up with its last fence for this long first. */
  readonly clockBehindMs: number;
}

/** The Redis side of a lease: heartbeat and release, each one script. */
export function leaseBackend(run: Run): LeaseBackend {
  return {
    async heartbeat(lease, leaseMs) {
      const args = [lease.owner, lease.fence, leaseMs, leaseMs + RETRY_WINDOW_MS];
      const [extended, ttl] = await run(scripts.heartbeat, lease.name, args, lease.owner);
      return extended === 1 ? ttl : null;
    },
    async release(lease, requestId): Promise<ReleaseOutcome> {
      const args = [lease.owner, lease.fence, requestId, RETRY_WINDOW_MS];
      const [released] = await run(scripts.release, lease.name, args, lease.owner, lease.fence);
      return released === 1 ? "released" : "expired";
    },
  };
}

/** One attempt to take the lock: the lease, or what the busy lock looked like. */
export function attemptAcquire(run: Run, backend: LeaseBackend) {
  return async function attempt(name: string, owner: string, ticket: string, leaseMs: number, queueMs: number): Promise<Lease | BusyAttempt> {
    const sentAt = performance.now();
    const args = [owner, ticket, leaseMs, leaseMs + RETRY_WINDOW_MS, queueMs];
    const reply = await run(scripts.acquire, name, args, owner);
    if (reply[0] !== 1) {
      const [, ttlMs, position, newestFence] = reply; // {0, ttlMs, position, newest}
      return { busyForMs: Math.max(0, ttlMs), clockBehindMs: Math.max(0, -ttlMs), position, newestFence };
    }
    const [, fence, , ttlMs] = reply; // {1, fence, holds, ttlMs}
    // Only data under the prefix that is not fencelock's could hold such a fence.
    if (fence <= 0) throw unexpectedReply(scripts.acquire);
    // A join may find the lock with more TTL than leaseMs; the drift allowance grows with it.
    const validUntil = sentAt + ttlMs - driftMs(ttlMs);
    // Too late to use. The hold stays for the next attempt to rejoin, or for leave to give back:
    // giving it back now, a late duplicate could undo the next attempt's hold.
    if (validUntil - performance.now() < leaseMs / 10) return { busyForMs: -1, clockBehindMs: 0, position: -1, newestFence: fence };
    return new Lease({ name, owner, fence, leaseMs, validUntil }, backend);
  };
}
