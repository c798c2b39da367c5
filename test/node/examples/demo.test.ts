import { describe, expect, it } from "vitest";
import { brokenInvariants, runDemo, table, type DemoOptions } from "../../../scripts/demo.ts";

describe("npm run demo: the ticket sale in workerd", () => {
  it("sells exactly 50 tickets to 200 concurrent buyers and refuses the paused holder's write", async () => {
    const options: DemoOptions = { buyers: 200, tickets: 50, leaseMs: 1_000 };
    const result = await runDemo(options);
    expect(brokenInvariants(result, options)).toEqual([]);
    // Not in errors: a 503 with Retry-After (Redis too slow for a 1 s lease on a loaded machine), which buyers retry.
    expect(result).toMatchObject({ sold: 50, oversold: 0, remaining: 0, soldOut: 150, errors: [] });
    expect(result.staleRejected).toBeGreaterThanOrEqual(1);
    expect(result.turnedAway).toBeGreaterThan(0);
  }, 120_000);

  it("says what each unexpected answer was", () => {
    const result = { sold: 50, oversold: 0, remaining: 0, turnedAway: 9, buyersTurnedAway: 9, soldOut: 150, staleRejected: 1, unavailable: 0, seconds: 8,
      errors: ["503 {\"error\":\"no answer within 3000ms\"}", "500 Internal Server Error", "503 {\"error\":\"no answer within 3000ms\"}"] };
    const printed = table(result, { buyers: 200, tickets: 50, leaseMs: 1_000 });
    expect(printed).toMatch(/other errors +3\n {2}wall time +8\.0 s\n {2}other errors, by answer:\n    2x 503 \{"error":"no answer within 3000ms"\}\n    1x 500 Internal Server Error$/);
  });
});
