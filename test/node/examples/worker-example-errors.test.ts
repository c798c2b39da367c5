// The example worker's error handler answers 500 without details, and logs what the deployer must fix.
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { app } from "../../../worker/index.ts";

describe("the example worker's errors", () => {
  afterEach(() => vi.restoreAllMocks());

  it("logs a setup mistake (LEASE_MS below the minimum) that it answers with a bare 500", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { url, token } = inject("upstash");
    const env = { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, LEASE_MS: "50" };
    const response = await app.request("/events/gig", { method: "PUT", body: "{}" }, env);
    expect([response.status, await response.json()]).toEqual([500, { error: "internal error" }]);
    expect(String(logged.mock.calls[0]?.[0])).toMatch(/leaseMs: must be at least 100 ms/);
  });
});
