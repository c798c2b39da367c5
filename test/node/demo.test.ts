import { describe, expect, it } from "vitest";
import { brokenInvariants, runDemo, type DemoOptions } from "../../scripts/demo.ts";

describe("npm run demo: the ticket sale in workerd", () => {
  it("sells exactly 50 tickets to 200 concurrent buyers and refuses the paused holder's write", async () => {
    const options: DemoOptions = { buyers: 200, tickets: 50, leaseMs: 1_000 };
    const result = await runDemo(options);
    expect(brokenInvariants(result, options)).toEqual([]);
    expect(result).toMatchObject({ sold: 50, oversold: 0, remaining: 0, soldOut: 150, errors: 0 });
    expect(result.staleRejected).toBeGreaterThanOrEqual(1);
    expect(result.turnedAway).toBeGreaterThan(0);
  }, 120_000);
});
