// acquire() and tryAcquire() check their options on a quick path that skips zod for valid input:
// whatever the input, it must accept, reject and report exactly as zod does.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { acquireOptionsSchema, parseAttemptOptions, parseOptions, tryAcquireOptionsSchema } from "../../../src/core/options.ts";

const signal = new AbortController().signal;
const value = fc.oneof(
  fc.constantFrom(
    undefined, null, 0, -0, 1, 99, 100, 101, 5_000, 600_000, 600_001, 3_600_000, 3_600_001, -1, 1.5, Number.NaN, Infinity, 2 ** 53,
    "poll", "push", "Poll", "", "0".repeat(32), "a".repeat(32), "A".repeat(32), "g".repeat(32), "a".repeat(31),
    signal, { throwIfAborted: () => 0 }, { throwIfAborted: 1 }, () => 0, [], {}, true,
  ),
  fc.integer({ min: -10, max: 4_000_000 }), fc.double(), fc.string(),
  fc.string({ unit: fc.constantFrom(..."0123456789abcdefA"), minLength: 30, maxLength: 34 }),
);
const keys = ["waitMs", "leaseMs", "owner", "signal", "waitUntil", "wake", "fence", "waitms", "__proto__", "0"];
const input = fc.oneof(
  fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: 4 }),
  fc.record({ waitMs: value, signal: value }, { requiredKeys: [] }),
  fc.record({ waitMs: fc.integer({ min: -5, max: 700_000 }), leaseMs: fc.integer({ min: 0, max: 4_000_000 }) }, { requiredKeys: [] }),
  value,
  fc.array(value, { maxLength: 2 }),
);

type Outcome = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
function outcome(parse: () => object): Outcome {
  try {
    return { ok: true, value: parse() as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

const schemas = [[acquireOptionsSchema, "acquire options"], [tryAcquireOptionsSchema, "tryAcquire options"]] as const;

/** The same verdict, error text and option values from the quick path as from zod. */
function expectSame(schema: (typeof schemas)[number][0], given: unknown, what: string): void {
  const quick = outcome(() => parseAttemptOptions(schema, given, what));
  const zod = outcome(() => parseOptions(schema, given, what));
  expect(quick.ok).toBe(zod.ok);
  if (!quick.ok || !zod.ok) {
    expect(quick).toEqual(zod);
    return;
  }
  for (const key of Object.keys(schema.shape)) expect(Object.is(quick.value[key], zod.value[key])).toBe(true);
}

describe("the options' quick path", () => {
  for (const [schema, what] of schemas) {
    it(`accepts, rejects and reports as zod does: ${what}`, () => {
      fc.assert(fc.property(input, (given) => expectSame(schema, given, what)), { numRuns: 3_000 });
    });
  }

  it("reads non-enumerable, inherited and class-held keys as zod reads them", () => {
    const odd = [
      Object.defineProperty({}, "waitMs", { value: -5 }), Object.create({ waitMs: 5 }), Object.create({ waitMs: -5 }),
      Object.create({ extra: 1 }), Object.create(null), new Map(), new (class { waitMs = 7 })(),
    ];
    for (const given of odd) expectSame(acquireOptionsSchema, given, "acquire options");
  });
});
