/** Shortest pause between attempts: a waiter makes at most 20 requests a second. */
export const MIN_RETRY_MS = 50;
const MAX_RETRY_MS = 800;

/**
 * How long to sleep before the next attempt: grows 50, 100, 200 ... 800 ms, never
 * past the holder's remaining TTL (the lock is free by then) or the wait budget,
 * with jitter so that waiters released together do not retry together.
 */
export function retryDelayMs(attempt: number, busyForMs: number, budgetMs: number, random = Math.random): number {
  const grown = Math.min(MAX_RETRY_MS, MIN_RETRY_MS * 2 ** Math.min(attempt, 4));
  const jittered = grown * (0.5 + random() / 2);
  const floored = Math.max(MIN_RETRY_MS, jittered);
  // +1: the key is gone only once its TTL has fully elapsed.
  const untilFree = Math.max(1, busyForMs + 1);
  return Math.max(0, Math.min(floored, untilFree, budgetMs));
}

/** Sleeps, rejecting with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
