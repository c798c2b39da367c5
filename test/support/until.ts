import { sleep } from "../../src/waiting/backoff.ts";

/** Polls `check` every 20 ms until it holds; resolves with the time that took, or throws after `withinMs`. */
export async function until(check: () => Promise<boolean>, withinMs: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < withinMs) {
    if (await check()) return performance.now() - started;
    await sleep(20);
  }
  throw new Error(`condition not met within ${withinMs} ms`);
}
