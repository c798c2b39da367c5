/** Shortest pause between attempts: a waiter makes at most 20 requests a second. */
export const MIN_RETRY_MS = 50;
const MAX_RETRY_MS = 800;
/** A queued waiter keeps its place this long after each attempt; every pause is shorter. */
export const QUEUE_ALIVE_MS = 2_000;

/** What a busy attempt learned: the holder's remaining TTL and the caller's place in line. */
export interface Busy {
  /** 0 with a position above 0: free, but promised to an earlier waiter; -1: held for this call, but its reply came too late to use. */
  busyForMs: number;
  /** 0 = next in line; -1 = not queued. */
  position: number;
}

/**
 * How long to sleep before the next attempt: grows 50, 100, 200 ... 800 ms, but no longer
 * than 50 ms per place ahead in line, and 50 ms for the first two: the first looks every 50 ms,
 * so a free lock does not sit idle while its next holder sleeps, and so does the second, which
 * is first after the next handover (one that slept 100 ms there left the lock idle ~50 ms a
 * handover, where 50 ms looks take ~30: 18 critical sections a second became 25 with 8 waiters).
 * Never more than 50 ms past the holder's remaining TTL, never past the wait budget; with jitter
 * above the 50 ms floor, so that waiters further back do not retry in step.
 */
export function retryDelayMs(attempt: number, { busyForMs, position }: Busy, budgetMs: number, random = Math.random): number {
  const cap = Math.min(MAX_RETRY_MS, MIN_RETRY_MS * Math.max(position, 1));
  const grown = Math.min(cap, MIN_RETRY_MS * 2 ** Math.min(attempt, 4));
  const floored = Math.max(MIN_RETRY_MS, grown * (0.5 + random() / 2));
  // Promised to someone earlier: the holder's TTL says nothing about our turn.
  const reserved = busyForMs === 0 && position > 0;
  // 50 ms after the TTL runs out, not right as it does: behind a holder that heartbeats late the
  // TTL stays short, and looks timed to its end would come faster than one per 50 ms, each
  // finding it extended.
  const untilFree = reserved ? Infinity : busyForMs + MIN_RETRY_MS;
  return Math.max(0, Math.min(floored, untilFree, budgetMs));
}

/**
 * Sleeps, rejecting with the signal's reason as soon as it aborts. Calling a function added to
 * `wakers` ends the sleep early: it clears the timer, where stopping a sleep through an
 * AbortController (a DOMException with its stack trace, events through AbortSignal.any) took
 * ~0.1 ms between a push message and acquire() resolving.
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
