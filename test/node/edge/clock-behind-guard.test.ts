// A guarded request whose lock is free but cannot be minted yet (Redis' clock behind the lock's
// last fence) is told so, with Retry-After for when the clock catches up: not "Redis did not answer".
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import { createLocks } from "../../../src/index.ts";
import { lockGuard } from "../../../src/hono.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("lockGuard when Redis' clock is behind the lock's last fence", () => {
  it("answers 503 with Retry-After until the clock catches up, and says why", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const prefix = uniquePrefix("guard-clock");
    const last = (Date.now() + 30_000) * 1_000;
    await upstash().hset(lockKeys(prefix, "job").fence, { last: String(last) });
    await upstash().pexpire(lockKeys(prefix, "job").fence, 120_000);
    const app = new Hono();
    app.post("/job", lockGuard({ locks: createLocks({ redis: upstash(), prefix }), name: () => "job" }), (c) => c.text("ran"));
    const response = await app.request("/job", { method: "POST" });
    expect(response.status).toBe(503);
    // 30 s ahead, less the 1 s a fence may lead its clock.
    expect(Number(response.headers.get("Retry-After"))).toBeGreaterThanOrEqual(25);
    expect(Number(response.headers.get("Retry-After"))).toBeLessThanOrEqual(30);
    expect(await response.json()).toMatchObject({ type: "urn:fencelock:problem:clock-behind", status: 503 });
    expect(String(logged.mock.calls[0]?.[0])).toMatch(/ClockBehindError: Lock "job" is free, but the Redis clock is behind/);
    logged.mockRestore();
  });
});
