// The options schema lockGuard and guardFetch share.
import * as z from "zod/mini";
import { ms } from "../core/options.ts";

// Checked when the guard is built: a wrong kind of value would otherwise fail every request.
export const aFunction = (what: string) => z.custom<unknown>((v) => typeof v === "function", `expected ${what}`);
export const hasMethod = (v: unknown, method: string) => typeof (v as Record<string, unknown> | null)?.[method] === "function";
export const optionalFunction = z.optional(aFunction("a function"));

/** lockGuard's and guardFetch's options (guardFetch also needs `locks` to be a function). */
export const guardOptionsSchema = z.strictObject({
  locks: z.custom<unknown>(
    (v) => typeof v === "function" || hasMethod(v, "acquire"),
    "expected the lock set from createLocks(), or a function that returns it",
  ),
  name: aFunction("a function of the request that returns the lock name"),
  onLocked: optionalFunction,
  waitMs: z.optional(ms(0, 600_000)),
  leaseMs: z.optional(ms(100, 3_600_000)),
  wake: z.optional(z.enum(["poll", "push"], 'expected "poll" or "push"')),
  release: z.optional(z.enum(["await", "waitUntil"], 'expected "await" or "waitUntil"')),
}, "expected an options object");
