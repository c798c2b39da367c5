// parseOptions passes acquire() and tryAcquire() options by plain checks before zod: whatever the
// input, it must return what zod returns, or throw the LockConfigError zod's issues make.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { LockConfigError } from "../../../src/core/errors.ts";
import { acquireOptionsSchema, describeIssue, parseOptions, tryAcquireOptionsSchema } from "../../../src/core/options.ts";

const OWNER = "0123456789abcdef0123456789abcdef";
const signal = new AbortController().signal;

const value = fc.constantFrom<unknown>(
  undefined, null, 0, -0, -1, 1, 99, 100, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 5_000, 600_000, 600_001,
  3_600_000, 3_600_001, 2 ** 53, 1n, "", "10", "poll", "push", "PUSH", OWNER, OWNER.toUpperCase(), `${OWNER}0`,
  signal, AbortSignal.abort(), { throwIfAborted: () => undefined }, { throwIfAborted: 1 }, {}, [], () => undefined, Symbol("s"),
);
const key = fc.constantFrom("waitMs", "leaseMs", "owner", "signal", "waitUntil", "wake", "timeoutMs", "constructor", "toString", "__proto__");
const entries = fc.array(fc.tuple(key, value), { maxLength: 5 });

/** Options objects of every shape the plain checks might misread, and inputs that are no object. */
const input = fc.oneof(
  entries.map((pairs) => Object.fromEntries(pairs)),
  // JSON.parse makes "__proto__" an own key, as a parsed request body would.
  entries.map((pairs) => JSON.parse(JSON.stringify(Object.fromEntries(pairs.filter(([, v]) => typeof v !== "bigint"))))),
  entries.map((pairs) => Object.assign(Object.create(null), Object.fromEntries(pairs))),
  fc.tuple(entries, entries).map(([own, inherited]) => Object.assign(Object.create(Object.fromEntries(inherited)), Object.fromEntries(own))),
  entries.map((pairs) => Object.assign(new (class Options {})(), Object.fromEntries(pairs))),
  value,
);

/** What parseOptions must do: zod's answer, or its issues as a LockConfigError. */
function zodsAnswer(schema: z.ZodMiniType, given: unknown) {
  const result = z.safeParse(schema, given ?? {});
  return result.success ? { data: result.data } : { problems: result.error.issues.map(describeIssue) };
}

function ownEntries(value: unknown) {
  return Object.keys(value as object).sort().map((k) => [k, (value as Record<string, unknown>)[k]]);
}

describe("acquire and tryAcquire options without zod", () => {
  it.each([
    ["acquire", acquireOptionsSchema],
    ["tryAcquire", tryAcquireOptionsSchema],
  ])("%s: the same result as zod for any input, the same keys and values, or the same errors", (_, schema) => {
    fc.assert(
      fc.property(input, (given) => {
        const expected = zodsAnswer(schema, given);
        let parsed: unknown;
        try {
          parsed = parseOptions(schema, given, "options");
        } catch (error) {
          expect(error).toBeInstanceOf(LockConfigError);
          expect(expected.problems).toBeDefined();
          expect((error as LockConfigError).message).toBe(new LockConfigError("options", expected.problems ?? []).message);
          return;
        }
        expect(expected.data).toBeDefined();
        expect(ownEntries(parsed)).toEqual(ownEntries(expected.data));
        // A copy: the caller's object is never handed back, so changing it later changes nothing.
        if (typeof given == "object" && given !== null) expect(parsed).not.toBe(given);
      }),
      { numRuns: 5_000 },
    );
  });

  it("passes inherited options as zod does, and refuses an inherited unknown key", () => {
    const inherited = Object.create({ waitMs: 5 });
    expect(parseOptions(acquireOptionsSchema, inherited, "options")).toEqual(zodsAnswer(acquireOptionsSchema, inherited).data);
    const unknown = Object.create({ timeout: 5 });
    expect(() => parseOptions(acquireOptionsSchema, unknown, "options")).toThrow(/unknown option "timeout"/);
  });

  it("reads an option every object inherits, as zod reads it", () => {
    Object.defineProperty(Object.prototype, "waitMs", { value: "soon", configurable: true, writable: true });
    try {
      expect(() => parseOptions(acquireOptionsSchema, {}, "options")).toThrow(/waitMs: expected a number of milliseconds/);
    } finally {
      Reflect.deleteProperty(Object.prototype, "waitMs");
    }
  });
});
