// How a waiter paces its attempts: the backoff between looks, and a sleep that can be woken early.
import type { Busy } from "../core/backend.ts";

/** Shortest pause between attempts: a waiter makes at most 20 requests a second. */
export const MIN_RETRY_MS = 50;
const MAX_RETRY_MS = 800;
/** A queued waiter keeps its place this long after each attempt; every pause is shorter. */
export const QUEUE_ALIVE_MS = 2_000;

/**
 * How long to sleep before the next attempt: 50, 100, 200 ... 800 ms, jittered above 50 ms so
 * waiters do not retry in step; at most 50 ms per place ahead in line, so the first two (the
 * second is first after a handover) look every 50 ms and a free lock does not sit idle; at most
 * 50 ms past the holder's TTL; never past the wait budget. A waiter with no place in line (quorum
 * mode) is jittered from the first pause: contenders whose votes split must not retry in step.
 */
export function retryDelayMs(attempt: number, { busyForMs, position }: Busy, budgetMs: number, random = Math.random): number {
  const cap = position < 0 ? MAX_RETRY_MS : Math.min(MAX_RETRY_MS, MIN_RETRY_MS * Math.max(position, 1));
  const grown = Math.min(cap, MIN_RETRY_MS * 2 ** Math.min(attempt, 4));
  const floored = position < 0 ? MIN_RETRY_MS + grown * random() : Math.max(MIN_RETRY_MS, grown * (0.5 + random() / 2));
  // Promised to someone earlier: the holder's TTL says nothing about our turn.
  const reserved = busyForMs === 0 && position > 0;
  // 50 ms after the TTL runs out, not as it does: a holder that heartbeats late keeps its TTL
  // short, and looks timed to its end would come faster than one per 50 ms.
  const untilFree = reserved ? Infinity : busyForMs + MIN_RETRY_MS;
  return Math.max(0, Math.min(floored, untilFree, budgetMs));
}

/**
 * Sleeps, rejecting with the signal's reason as soon as it aborts. A function added to `wakers`
 * ends it early: cheaper than an AbortController, which cost ~0.1 ms per push wake-up.
 */
export function sleep(ms: number, signal?: AbortSignal, wakers?: Set<() => void>): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const settle = () => {
      clearTimeout(timer);
      wakers?.delete(wake);
      signal?.removeEventListener("abort", onAbort);
    };
    const wake = () => (settle(), resolve());
    const onAbort = () => (settle(), reject(signal?.reason));
    const timer = setTimeout(wake, ms);
    wakers?.add(wake);
    signal?.addEventListener("abort", onAbort);
  });
}
