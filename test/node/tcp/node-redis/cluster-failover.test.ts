// fromNodeRedis on a Redis Cluster whose master goes down while a push wait listens on it: once the
// waits are over, no shard subscription is left behind on the replica that took over.
import { createCluster } from "redis";
import { afterEach, expect, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { startRedisCluster, type ClusterNode } from "../../../support/redis-cluster.ts";
import { until } from "../../../support/until.ts";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});

/** The shard channels `node` has subscribers on. */
const shardChannels = async (node: ClusterNode) => (await node.admin.call("PUBSUB", "SHARDCHANNELS")) as string[];

it("a wait's shard subscription on a master that crashed does not outlive the wait on the replica that took over", { timeout: 90_000 }, async () => {
  const servers = await startRedisCluster({ replicas: true });
  cleanup.push(() => servers.stop());
  const cluster = createCluster({ rootNodes: servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
  cluster.on("error", () => {});
  await cluster.connect();
  cleanup.push(async () => cluster.destroy());
  const [master, replica] = [servers.masters[0]!, servers.replicas[0]!];
  // A name in the first master's slots (startRedisCluster gives it slot 0 on).
  let name = "";
  for (let i = 0; !name; i++) if (Number(await master.admin.call("CLUSTER", "KEYSLOT", `job:${i}`)) < 5_000) name = `job:${i}`;
  const locks = createLocks({ redis: fromNodeRedis(cluster), prefix: "failover", leaseMs: 3_000, timeoutMs: 2_000 });
  await locks.acquire(name);
  // Handed the lock once the holder's lease ran out, or failed while the Cluster elected: either ends the wait.
  const waitEnded = locks.acquire(name, { waitMs: 30_000 }).then((lease) => lease.release(), () => undefined);
  await until(async () => (await shardChannels(master)).length === 1, 10_000);

  // As a crash: no goodbye on its connections. The stream's UNSUBSCRIBE then fails with the old master.
  process.kill(Number(/process_id:(\d+)/.exec(String(await master.admin.info("server")))?.[1]), "SIGKILL");
  await until(async () => String(((await replica.admin.call("ROLE")) as unknown[])[0]) === "master", 30_000);
  await waitEnded;
  // Calls on the moved slot make node-redis learn the new master, and move its shard subscriptions there.
  await until(async () => (await locks.tryAcquire(name).then((lease) => lease?.release(), () => "failed")) !== "failed", 20_000);
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  await until(async () => (await shardChannels(replica)).length === 0, 20_000);
});
