// A fence as a value: checking one, and reading one from the Fencing-Token header.
import { LockConfigError } from "./errors.ts";

/**
 * Whether a positive safe integer could be a fence by now: fences are the server's µs (acquire.lua), so one an
 * hour ahead of this clock (past any sane skew) is forged, and stored it would outrank every honest holder.
 */
function isFenceSoFar(fence: number): boolean {
  return Number.isSafeInteger(fence) && fence > 0 && fence <= (Date.now() + 3_600_000) * 1000;
}

/** Throws LockConfigError unless `fence` could have come from a lease. */
export function checkFence(fence: unknown, what: string): number {
  if (typeof fence !== "number" || !isFenceSoFar(fence)) {
    throw new LockConfigError(what, [
      // Only the type of a non-number: "12" must not read as valid, and a string here may be the
      // owner token, which no message may show.
      `fence: expected lease.fence, a positive safe integer not from the future, got ${typeof fence == "number" ? fence : typeof fence}`,
    ]);
  }
  return fence;
}

/** The HTTP header that carries a lease's fence to downstream storage. */
export const FENCE_HEADER = "Fencing-Token";

export type ParsedFence = { ok: true; fence: number } | { ok: false; problem: "missing" | "malformed" };

/**
 * Reads a Fencing-Token header strictly: a positive decimal integer no larger than
 * 2^53 - 1 nor an hour ahead of now in µs, no sign, exponent, fraction, leading zero or
 * surrounding junk.
 */
export function parseFenceHeader(value: string | null | undefined): ParsedFence {
  // Only space and tab surround a header value (trim() drops more). Anchored at the start, both
  // patterns take linear time on a long value; an unanchored `[ \t]+$` would take quadratic.
  if (!value || /^[ \t]*$/.test(value)) return { ok: false, problem: "missing" };
  const fence = Number(/^[ \t]*([1-9][0-9]{0,15})[ \t]*$/.exec(value)?.[1]);
  return isFenceSoFar(fence) ? { ok: true, fence } : { ok: false, problem: "malformed" };
}
