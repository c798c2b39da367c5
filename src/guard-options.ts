import * as z from "zod/mini";
import { ms } from "./options.ts";

// What guardSettings() and requireFence() check; functions and the lock set are left to the types.
const given = z.optional(z.unknown());

/** lockGuard's and guardFetch's options. */
export const guardOptionsSchema = z.strictObject({
  locks: given,
  name: given,
  onLocked: given,
  waitMs: z.optional(ms(0, 600_000)),
  leaseMs: z.optional(ms(100, 3_600_000)),
  wake: z.optional(z.enum(["poll", "push"], 'expected "poll" or "push"')),
  release: z.optional(z.enum(["await", "waitUntil"], 'expected "await" or "waitUntil"')),
}, "expected an options object");

export const requireFenceOptionsSchema = z.strictObject({
  store: given,
  resource: given,
  onProblem: given,
  claim: z.optional(z.boolean("expected true or false")),
}, "expected an options object");
