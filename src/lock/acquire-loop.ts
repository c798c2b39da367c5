// The loop behind acquire() and tryAcquire(): attempt, pause, retry, until the lock or the deadline.
import { driftMs, type Busy, type BusyAttempt, type LockBackend } from "../core/backend.ts";
import { ClockBehindError, LockUnavailableError } from "../core/errors.ts";
import { newToken } from "../core/keys.ts";
import type { AcquireOptions } from "../core/options.ts";
import { Lease } from "./lease.ts";
import { giveBackAfter, RETRY_WINDOW_MS } from "../redis/run-script.ts";
import { QUEUE_ALIVE_MS, sleep } from "../waiting/backoff.ts";
import { pollWaiter, pushWaiter, type Waiter } from "../waiting/push.ts";
import type { WakeChannel } from "../waiting/wake-channel.ts";

/** What the loop needs of its lock set's options. */
interface LoopConfig {
  /** The channel a lock's push waiters share; undefined in quorum mode, which waits by backoff. */
  readonly channelFor: ((name: string) => WakeChannel) | undefined;
  readonly leaseMs: number;
  /** Says once that the lock set waits otherwise than asked. */
  readonly warn: (message: string) => void;
}

/** acquireWithin(name, opts, waitMs): the lease, or what the lock looked like when waitMs ran out. */
export function acquireLoop(config: LoopConfig, backend: LockBackend) {
  async function acquireWithin(name: string, opts: AcquireOptions, waitMs: number): Promise<Lease | Busy> {
    const leaseMs = opts.leaseMs ?? config.leaseMs;
    const owner = opts.owner ?? newToken();
    // One request id for every attempt, so one that landed unseen is not counted twice.
    const requestId = newToken();
    const { ticket, waiter } = waitingFor(name, opts, waitMs, owner, requestId, leaseMs);
    const deadline = performance.now() + waitMs;
    // Only a caller that will wait takes a place in line.
    const queueMs = waitMs > 0 ? QUEUE_ALIVE_MS : 0;
    // True while Redis may hold a place in line for this call, or a hold it has not received.
    let queued = false;
    // What the last attempt failed with, if it did: one that timed out may still take a hold later.
    let failure: unknown;
    // A lease received leaves no hold to give back; an abort meanwhile still wins. Returned, not
    // awaited, so a kept lease costs no extra turn; queued is false, so the finally only closes the waiter.
    const deliver = (lease: Lease) => ((queued = false), keepUnlessAborted(lease, opts.signal));
    try {
      for (let tries = 0; ; tries++) {
        opts.signal?.throwIfAborted();
        const sentAt = performance.now();
        // Until its reply arrives, an attempt may have queued or taken a hold.
        const wasQueued: boolean = queued;
        queued = true;
        const outcome = await backend.attempt(name, owner, ticket, leaseMs, queueMs);
        if ("fence" in outcome) {
          waiter.granted?.();
          return deliver(new Lease({ name, owner, leaseMs, ...outcome }, backend));
        }
        // Queued, or holding a hold whose reply came too late (busyForMs -1).
        queued = wasQueued || outcome.position >= 0 || outcome.busyForMs < 0;
        // An abort while the attempt was out wins over what it found, as over a lease it got.
        opts.signal?.throwIfAborted();
        const budgetMs = deadline - performance.now();
        if (budgetMs <= 0) return outOfTime(name, outcome);
        const fence = await pause(waiter, tries, outcome, budgetMs, opts.signal);
        const lease = fence && leaseFromHandover(name, owner, leaseMs, fence, sentAt, outcome.newestFence);
        if (lease) return deliver(lease);
      }
    } catch (error) {
      failure = error;
      // An abort wins over an attempt that failed while it was out, too.
      opts.signal?.throwIfAborted();
      throw error;
    } finally {
      // Closed first: a waitUntil that throws must not leave the stream open.
      waiter.close?.();
      if (queued) leaveLine(name, ticket, opts.waitUntil, failure);
    }
  }

  /** How a call waits between attempts, and the ticket that keeps its place in line. */
  function waitingFor(name: string, opts: AcquireOptions, waitMs: number, owner: string, requestId: string, leaseMs: number) {
    const { channelFor } = config;
    // As a client that cannot subscribe does: a guard's options must not fail every request.
    if (opts.wake === "push" && !channelFor && waitMs > 0) config.warn('wake: "push" needs one Redis; a quorum lock set waits with jittered backoff');
    // Push by default; a call that will not wait has nothing to be woken for.
    const push = opts.wake !== "poll" && waitMs > 0 && channelFor?.(name);
    if (!push) return { ticket: requestId, waiter: pollWaiter };
    // A push waiter's ticket carries what release.lua needs to take the lock on its behalf, and where to say so.
    const ticket = `${requestId}.${owner}.${leaseMs}.${leaseMs + RETRY_WINDOW_MS}.${push.address}`;
    return { ticket, waiter: pushWaiter(push, requestId, owner, leaseMs) };
  }

  /**
   * A lease from a handover whose fence is newer than any the attempt saw: minted after it was
   * sent, so it runs leaseMs from sentAt at least. With too little left, the next attempt learns its TTL.
   */
  function leaseFromHandover(name: string, owner: string, leaseMs: number, fence: number, sentAt: number, newestFence: number) {
    if (fence <= newestFence) return undefined;
    const lease = new Lease({ name, owner, fence, leaseMs, validUntil: sentAt + leaseMs - driftMs(leaseMs) }, backend);
    return lease.remainingMs() >= leaseMs / 10 ? lease : undefined;
  }

  /** Leaves the line, and gives back any hold taken for this call (see giveBackAfter), without making the caller wait. */
  function leaveLine(name: string, ticket: string, waitUntil: ((work: Promise<unknown>) => void) | undefined, failure: unknown): void {
    const left = giveBackAfter(failure, () => backend.leave(name, ticket)).catch(() => undefined);
    // The runtime may stop a request's work once it answers: this must still reach Redis. A
    // waitUntil that throws (Workers' ctx.waitUntil passed unbound) must not replace the call's outcome.
    try {
      waitUntil?.(left);
    } catch {
      // the request is still on its way
    }
  }

  return acquireWithin;
}

/** The lease, unless the call was aborted meanwhile: then it is given back, and the abort wins. */
function keepUnlessAborted(lease: Lease, signal: AbortSignal | undefined): Lease | Promise<never> {
  return signal?.aborted ? giveBack(lease, signal) : lease;
}

async function giveBack(lease: Lease, signal: AbortSignal): Promise<never> {
  await lease.release().catch(() => undefined);
  throw signal.reason;
}

/** What the last attempt of a call that ran out of time found. */
function outOfTime(name: string, busy: BusyAttempt): Busy {
  const { clockBehindMs } = busy;
  if (clockBehindMs > 0) throw new ClockBehindError(name, clockBehindMs);
  // The lock was free, and the reply too late to use: "busy" would mislead.
  if (busy.busyForMs < 0) throw new LockUnavailableError("Redis took most of leaseMs to answer; raise leaseMs.");
  return busy;
}

/** Waits for the next attempt; resolves with a fence when a release handed this call the lock. */
function pause(waiter: Waiter, tries: number, busy: BusyAttempt, budgetMs: number, signal: AbortSignal | undefined) {
  const { clockBehindMs } = busy;
  // No release can hand the lock over before the clock catches up; the next attempt keeps the place in line.
  if (clockBehindMs > 0) return sleep(Math.min(clockBehindMs, QUEUE_ALIVE_MS / 2, budgetMs), signal);
  return waiter.pause(tries, busy, budgetMs, signal);
}
