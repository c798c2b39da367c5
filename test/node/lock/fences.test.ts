import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalUpstash, startRedisServer } from "../../../src/local/index.ts";
import { createLocks } from "../../../src/index.ts";

// Its own redis-server, because these tests flush and restart it.
let redisServer: Awaited<ReturnType<typeof startRedisServer>>;
let local: Awaited<ReturnType<typeof startLocalUpstash>>;
let redis: Redis;
beforeAll(async () => {
  redisServer = await startRedisServer();
  local = await startLocalUpstash({ redisUrl: redisServer.url });
  redis = new Redis({ url: local.url, token: local.token, enableTelemetry: false });
});
afterAll(async () => {
  await local?.close();
  await redisServer?.stop();
});

async function nextFence(name: string): Promise<number> {
  const lease = await createLocks({ redis, prefix: "fences" }).acquire(name, { waitMs: 5_000 });
  await lease.release();
  return lease.fence;
}

/** The local server reconnects to a restarted Redis in the background; wait for it. */
async function untilReconnected(): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    if (await redis.ping().then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the local server did not reconnect to Redis within 10 s");
}

describe("fencing tokens", () => {
  it("strictly increase over 1,000 acquisitions of one name, as safe integers", async () => {
    let previous = 0;
    for (let i = 0; i < 1_000; i++) {
      const fence = await nextFence("counter");
      expect(Number.isSafeInteger(fence)).toBe(true);
      expect(fence).toBeGreaterThan(previous);
      previous = fence;
    }
  });

  it("are floored by server time in microseconds", async () => {
    const before = Date.now() * 1_000;
    const fence = await nextFence("clock");
    // Generous: the server clock is this machine's clock.
    expect(fence).toBeGreaterThanOrEqual(before - 1_000_000);
    expect(fence).toBeLessThan(before + 60_000_000);
  });

  it("still increase after every key is lost (FLUSHALL)", async () => {
    const before = await nextFence("flushed");
    await redis.flushall();
    expect(await redis.dbsize()).toBe(0);
    expect(await nextFence("flushed")).toBeGreaterThan(before);
  });

  it("still increase after redis-server restarts with nothing persisted", async () => {
    const before = await nextFence("restarted");
    const port = redisServer.port;
    await redisServer.stop();
    redisServer = await startRedisServer({ port });
    await untilReconnected();
    expect(await nextFence("restarted")).toBeGreaterThan(before);
  });

  it("leave no key without a TTL", async () => {
    const locks = createLocks({ redis, prefix: "ttl" });
    const outer = await locks.acquire("a");
    const inner = await locks.acquire("a", { owner: outer.owner });
    const b = await locks.acquire("b");
    await b.release(); // remembered for its retries: one more key
    const waiting = locks.acquire("a", { waitMs: 5_000 }); // queues: two more keys
    while ((await locks.inspect("a")).waiters === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const keys = await redis.keys("ttl:*");
    expect(keys).toEqual(expect.arrayContaining([
      "ttl:{a}:lock", "ttl:{a}:fence", "ttl:{a}:queue", "ttl:{a}:alive", "ttl:{b}:fence",
      `ttl:{b}:releases:${b.fence}`,
    ]));
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
    await inner.release();
    await outer.release();
    await (await waiting).release();
  });

  it("leave no key without a TTL when the fence record was evicted while the lock was held", async () => {
    const locks = createLocks({ redis, prefix: "evicted" });
    const lease = await locks.acquire("a");
    // What a maxmemory policy such as volatile-lru may do to any key with a TTL.
    await redis.del("evicted:{a}:fence");
    expect(await lease.release()).toBe("released");
    const keys = await redis.keys("evicted:*");
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
    // The release is still remembered for its retries, and the next fence still rises.
    expect(await locks.resume(lease).release()).toBe("released");
    expect((await locks.acquire("a")).fence).toBeGreaterThan(lease.fence);
  });

  it("tell only the lease that was released so: the same fence under another owner is told expired", async () => {
    const locks = createLocks({ redis, prefix: "forged" });
    const lease = await locks.acquire("a");
    await lease.release();
    expect(await locks.resume({ name: "a", owner: "0".repeat(32), fence: lease.fence }).release()).toBe("expired");
    expect(await locks.resume(lease).release()).toBe("released");
  });
});
