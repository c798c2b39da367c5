import { LockConfigError } from "./errors.ts";

/** Throws LockConfigError unless `fence` could have come from a lease: a positive safe integer. */
export function checkFence(fence: unknown, what: string): number {
  if (typeof fence !== "number" || !Number.isSafeInteger(fence) || fence <= 0) {
    throw new LockConfigError(what, [`fence: expected lease.fence, a positive safe integer, got ${String(fence)}`]);
  }
  return fence;
}
