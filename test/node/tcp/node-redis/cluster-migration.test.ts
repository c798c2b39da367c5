// A slot migration under load through fromNodeRedis(createCluster(...)), as the ioredis test does:
// no worker sees an error, no two hold a lock at once, and each lock's fences rise.
import { createCluster } from "redis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { expectMigrationUnseen } from "../../../support/cluster-migration.ts";
import { startRedisCluster, type RedisCluster } from "../../../support/redis-cluster.ts";

let servers: RedisCluster;
let cluster: ReturnType<typeof createCluster>;
beforeAll(async () => {
  servers = await startRedisCluster();
  cluster = createCluster({ rootNodes: servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
  cluster.on("error", () => {});
  await cluster.connect();
});
afterAll(async () => {
  await cluster?.close();
  await servers?.stop();
});

describe("a slot migration under load", () => {
  // node-redis 6 follows ASK and MOVED only; fromNodeRedis retries TRYAGAIN, or a release refused
  // mid-move would leave its lock held until the lease ends.
  it("is invisible to lock users: no errors, one holder at a time, fences rising per lock", async () => {
    await expectMigrationUnseen(servers, fromNodeRedis(cluster));
  });
});
