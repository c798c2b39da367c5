// A fence more than an hour ahead of the clock is forged: fenced SQL and the Fencing-Token header
// have no Redis script behind them to refuse it, and stored, it would lock honest writers out.
import { expect, it } from "vitest";
import { LockConfigError } from "../../../src/index.ts";
import { fencedWriteSql } from "../../../src/sql.ts";
import { parseFenceHeader } from "../../../src/core/fence.ts";

it("refuses a fence two hours ahead of the clock, in fenced SQL and in the Fencing-Token header", () => {
  const twoHoursAhead = (Date.now() + 2 * 3_600_000) * 1000;
  expect(() => fencedWriteSql({ table: "events", key: { id: "e1" }, fence: twoHoursAhead, set: { remaining: 1 } })).toThrow(LockConfigError);
  expect(parseFenceHeader(String(twoHoursAhead))).toEqual({ ok: false, problem: "malformed" });
  // 50 minutes ahead is still a fence (clocks may be off, fences may lead theirs).
  const fiftyMinutesAhead = (Date.now() + 50 * 60_000) * 1000;
  expect(parseFenceHeader(String(fiftyMinutesAhead))).toEqual({ ok: true, fence: fiftyMinutesAhead });
});
