// A lock's Redis keys by role, for tests and benchmarks that read or seed them directly.
import { lockKeyList, nameTag } from "../../src/core/keys.ts";

export interface LockKeys {
  readonly lock: string;
  readonly fence: string;
  /** Waiters in arrival order, and when each stops counting as waiting. */
  readonly queue: string;
  readonly alive: string;
  /** Where release.lua remembers that the lease with this fence was released, for its retries. */
  readonly released?: string;
}

/** A lock's keys (without hashTag), in the layout the scripts use; `released` only for a lease's fence. */
export function lockKeys(prefix: string, name: string, fence?: number): LockKeys {
  const [lock = "", fenceKey = "", queue = "", alive = "", released] = lockKeyList(nameTag(prefix, name), fence);
  return { lock, fence: fenceKey, queue, alive, ...(released && { released }) };
}
