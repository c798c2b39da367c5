// The JSDoc @example blocks of src/, run as written against real Redis (a redis-server of their own,
// and a 3-master Cluster); only the scaffolding each example implies is added here. These:
// fencelock/ioredis and fromIoredis, and fromNodeRedis (fencelock/node-redis's module example runs
// in test/node/tcp/node-redis/standalone.test.ts). The examples' URLs become the test servers'.
import { Redis as IoRedis } from "ioredis";
import { createCluster as createNodeRedisCluster } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { startRedisCluster, type RedisCluster } from "../../../support/redis-cluster.ts";

let server: RedisServer;
let servers: RedisCluster;
beforeAll(async () => void ([server, servers] = await Promise.all([startRedisServer(), startRedisCluster()])));

/** The clients the examples open and never close (they run for the program's life), closed here. */
const opened: { close(): Promise<unknown> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((client) => client.close()));
  await Promise.all([server?.stop(), servers?.stop()]);
});

/** ioredis's Redis, each client kept to be closed after. */
class Redis extends IoRedis {
  constructor(url: string) {
    super(url);
    opened.push({ close: () => this.quit() });
  }
}

describe("@example src/ioredis.ts", () => {
  it("fencelock/ioredis example: charges the order under the lock with its fence, then releases it", async () => {
    const order = { id: "42" };
    const charges: { order: typeof order; fence: number }[] = [];
    const chargeCard = async (charged: typeof order, { fence }: { fence: number }) => void charges.push({ order: charged, fence });

    const locks = createLocks({ redis: fromIoredis(new Redis(server.url)), prefix: "app" });
    await locks.withLock("order:42", async (lease) => chargeCard(order, { fence: lease.fence }));

    expect(charges).toEqual([{ order, fence: expect.any(Number) }]);
    expect(await locks.inspect("order:42")).toMatchObject({ held: false, fence: charges[0]!.fence });
  });
});

describe("@example src/tcp/ioredis.ts fromIoredis", () => {
  it("fromIoredis example: a lock set over an ioredis client, fences rising", async () => {
    const locks = createLocks({ redis: fromIoredis(new Redis(server.url)), prefix: "app" });

    const first = await locks.withLock("job", (lease) => lease.fence);
    expect(await locks.withLock("job", (lease) => lease.fence)).toBeGreaterThan(first);
  });
});

describe("@example src/tcp/node-redis.ts fromNodeRedis", () => {
  it("fromNodeRedis example: a lock set over a connected node-redis cluster, on every master's slots", async () => {
    const rootNodes = servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` }));
    const createCluster: typeof createNodeRedisCluster = (options) => {
      const cluster = createNodeRedisCluster(options);
      opened.push(cluster);
      return cluster;
    };

    const locks = createLocks({ redis: fromNodeRedis(await createCluster({ rootNodes }).connect()), prefix: "app" });

    // Names whose keys ("app:{name}:…") are in the first, second and third master's slots.
    for (const name of ["job:3", "job:2", "job:0"]) {
      const first = await locks.withLock(name, (lease) => lease.fence);
      expect(await locks.withLock(name, (lease) => lease.fence)).toBeGreaterThan(first);
    }
  });
});
