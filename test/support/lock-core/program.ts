// The random programs of the lock core property test: what each client does, and the network it
// does it over.
import fc from "fast-check";
import type { ChaoticNet } from "../chaotic-fetch.ts";

export const NAMES = ["a", "b"];
export const MAX_LEASE_MS = 800;

export type Op =
  | { op: "acquire"; name: number; wake: "poll" | "push"; waitMs: number; leaseMs: number; abortAfterMs: number | null }
  | { op: "try"; name: number; leaseMs: number }
  | { op: "join"; lease: number; waitMs: number; leaseMs: number }
  | { op: "heartbeat"; lease: number }
  | { op: "release"; lease: number; twice: boolean }
  | { op: "resume"; lease: number }
  | { op: "write"; lease: number }
  | { op: "sleep"; ms: number };

export interface Net extends ChaoticNet {
  /** The lock set's timeoutMs: short ones give up on slow replies (and give the hold back by ticket). */
  timeoutMs: number;
}

const leaseMs = fc.integer({ min: 300, max: MAX_LEASE_MS });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({
    op: fc.constant("acquire" as const), name: fc.nat(1), wake: fc.constantFrom("poll" as const, "push" as const),
    waitMs: fc.integer({ min: 0, max: 1_200 }), leaseMs,
    abortAfterMs: fc.option(fc.integer({ min: 0, max: 600 }), { freq: 3 }),
  }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("try" as const), name: fc.nat(1), leaseMs }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("join" as const), lease: fc.nat(9), waitMs: fc.integer({ min: 0, max: 300 }), leaseMs }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("heartbeat" as const), lease: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("release" as const), lease: fc.nat(9), twice: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("resume" as const), lease: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("write" as const), lease: fc.nat(9) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("sleep" as const), ms: fc.integer({ min: 0, max: 400 }) }) },
);
export const scenario = fc.record({
  programs: fc.array(fc.array(op, { minLength: 3, maxLength: 10 }), { minLength: 2, maxLength: 5 }),
  net: fc.record({ seed: fc.integer(), dropPerMille: fc.integer({ min: 0, max: 150 }), maxDelayMs: fc.integer({ min: 0, max: 120 }),
    timeoutMs: fc.constantFrom(2_000, 2_000, 150, 250) }),
});
