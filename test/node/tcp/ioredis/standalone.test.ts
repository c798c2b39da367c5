// fromIoredis on a standalone redis-server, with stringNumbers off and on: the lock set and the
// fenced store behave as over HTTP.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFencedStore, createLocks, StaleFenceError } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { uniquePrefix } from "../../../support/upstash.ts";

let server: RedisServer;
beforeAll(async () => void (server = await startRedisServer()));
afterAll(() => server?.stop());

describe.each([false, true])("an ioredis client with stringNumbers: %s", (stringNumbers) => {
  let client: Redis;
  beforeAll(() => void (client = new Redis(server.url, { stringNumbers })));
  afterAll(() => client?.quit());

  const setup = () => {
    const redis = fromIoredis(client);
    const prefix = uniquePrefix("ioredis");
    return { locks: createLocks({ redis, prefix, leaseMs: 5_000 }), store: createFencedStore({ redis, prefix }) };
  };

  it("acquires, heartbeats and releases, each lease with a higher fence", async () => {
    const { locks } = setup();
    const first = await locks.acquire("job");
    await first.heartbeat();
    expect(first.remainingMs()).toBeGreaterThan(4_000);
    expect(await first.release()).toBe("released");
    const second = await locks.acquire("job");
    expect(second.fence).toBeGreaterThan(first.fence);
    expect(Number.isSafeInteger(second.fence)).toBe(true);
    expect(await second.release()).toBe("released");
    expect(await second.release()).toBe("released"); // a retried release
  });

  it("finds a held lock busy with tryAcquire, and inspect reports the holder", async () => {
    const { locks } = setup();
    const lease = await locks.acquire("job");
    expect(await locks.tryAcquire("job")).toBeNull();
    expect(await locks.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 1, waiters: 0 });
    expect((await locks.inspect("job")).remainingMs).toBeGreaterThan(4_000);
    await lease.release();
    expect(await locks.inspect("job")).toMatchObject({ held: false, fence: lease.fence });
  });

  it("runs withLock's work under the lock and releases it after", async () => {
    const { locks } = setup();
    const seen = await locks.withLock("job", async (lease) => ({ fence: lease.fence, held: (await locks.inspect("job")).held }));
    expect(seen.held).toBe(true);
    expect(await locks.inspect("job")).toMatchObject({ held: false, fence: seen.fence });
  });

  it("has the fenced store take a fresh fence and refuse a stale one", async () => {
    const { locks, store } = setup();
    const old = await locks.acquire("invoice");
    await old.release();
    const fresh = await locks.acquire("invoice");
    await store.write("invoice", { paid: true }, fresh.fence);
    await expect(store.write("invoice", { paid: false }, old.fence)).rejects.toBeInstanceOf(StaleFenceError);
    expect(await store.read("invoice", { fence: fresh.fence })).toEqual({ value: { paid: true }, fence: fresh.fence });
    await fresh.release();
  });
});
