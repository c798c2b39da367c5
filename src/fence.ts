import { LockConfigError } from "./errors.ts";

/** Throws LockConfigError unless `fence` could have come from a lease: a positive safe integer. */
export function checkFence(fence: unknown, what: string): number {
  if (typeof fence !== "number" || !Number.isSafeInteger(fence) || fence <= 0) {
    throw new LockConfigError(what, [`fence: expected lease.fence, a positive safe integer, got ${String(fence)}`]);
  }
  return fence;
}

/** The HTTP header that carries a lease's fence to downstream storage. */
export const FENCE_HEADER = "Fencing-Token";

export type ParsedFence = { ok: true; fence: number } | { ok: false; problem: "missing" | "malformed" };

/**
 * Reads a Fencing-Token header strictly: a positive decimal integer no larger than
 * 2^53 - 1, no sign, exponent, fraction, leading zero or surrounding junk.
 */
export function parseFenceHeader(value: string | null | undefined): ParsedFence {
  // Only space and tab are whitespace around a header value; trim() would also drop U+00A0, \v,
  // \f and U+FEFF, which a client can send.
  const text = value?.replace(/^[ \t]+|[ \t]+$/g, "");
  if (!text) return { ok: false, problem: "missing" };
  if (!/^[1-9][0-9]{0,15}$/.test(text)) return { ok: false, problem: "malformed" };
  const fence = Number(text);
  return Number.isSafeInteger(fence) ? { ok: true, fence } : { ok: false, problem: "malformed" };
}
