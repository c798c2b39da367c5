import { Redis } from "@upstash/redis";
import { createLocks } from "../../src/index.ts";
import { uniquePrefix } from "./upstash.ts";

/** Locks on an @upstash/redis client for `url` and `token` (a refused, hanging or wrong endpoint), with a 1 s timeoutMs. */
export function locksAt(url: string, token: string, retry?: { retries: number }) {
  const redis = new Redis({ url, token, enableTelemetry: false, ...(retry ? { retry } : {}) });
  return createLocks({ redis, prefix: uniquePrefix("down"), timeoutMs: 1_000 });
}

/** Waits for `promise` to reject; resolves with what it threw and how long that took (an Error if it did not reject). */
export async function failure(promise: Promise<unknown>) {
  const started = performance.now();
  const error = await promise.then(() => new Error("expected a failure"), (e: unknown) => e);
  return { error: error as Error, ms: performance.now() - started };
}
