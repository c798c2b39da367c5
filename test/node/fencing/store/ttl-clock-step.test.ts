// The fenced store's ttlMs on a Redis whose clock stepped back (NTP): fences then run up to τ = 1 s
// ahead of that clock, and an expired record must still refuse a holder it had outranked.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { createFencedStore, createLocks, StaleFenceError } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { ClockOffsetFile, clockShim, NO_COMPILER } from "../../../support/faults/clock-shim.ts";
import { RedisProcess } from "../../../support/faults/redis-process.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix } from "../../../support/upstash.ts";

const TTL_MS = 2_000;
/** Back by almost τ: the next fence is minted almost τ ahead of the clock. */
const STEP_BACK_MS = 950;

let server: RedisProcess | undefined;
let client: Redis | undefined;
const clock = new ClockOffsetFile(0);

beforeAll(async () => {
  const shim = await clockShim();
  if (!shim) return;
  server = await RedisProcess.start("store-clock", { clock: { shim, file: clock } });
  client = new Redis(server.url);
});

afterAll(async () => {
  client?.disconnect();
  await server?.kill();
  clock.remove();
});

describe("fenced store with ttlMs, after the clock stepped back", () => {
  it("refuses a paused holder's write to a record that expired after a newer holder wrote", async (ctx: TestContext) => {
    if (!client) return ctx.skip(NO_COMPILER);
    const redis = fromIoredis(client);
    const prefix = uniquePrefix("ttl-step");
    const locks = createLocks({ redis, prefix, leaseMs: 100 });
    const store = createFencedStore({ redis, prefix, ttlMs: TTL_MS });
    await (await locks.acquire("doc")).release();
    clock.set(-STEP_BACK_MS);
    const a = await locks.acquire("doc");
    const [seconds, micros] = await client.time();
    expect(a.fence - (Number(seconds) * 1e6 + Number(micros))).toBeGreaterThan(500_000); // ahead of the clock
    const b = await locks.acquire("doc", { waitMs: 1_000 }); // once A's lease lapsed
    await store.write("doc", "by B", b.fence);
    await b.release();
    // Looked up until Redis finds it expired, then A writes at once: well within ttlMs + τ of A's fence.
    await until(async () => (await store.read("doc")) === null, 10_000);
    await expect(store.write("doc", "by stale A", a.fence)).rejects.toThrow(StaleFenceError);
    await expect(store.claim("doc", a.fence)).rejects.toThrow(StaleFenceError);
    expect(await store.read("doc")).toBeNull();
    // A holder that came after is not held back.
    await locks.withLock("doc", (c) => store.write("doc", "by C", c.fence));
    expect((await store.read("doc"))?.value).toBe("by C");
  });
});
