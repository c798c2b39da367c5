/**
 * @module
 * fencelock/node-redis (Node only): fencelock over a client or cluster of the official `redis`
 * package (node-redis). Install redis yourself (an optional peer); the core (fencelock) never imports it.
 *
 * @example
 * ```ts
 * import { createClient } from "redis";
 * import { createFencedStore, createLocks } from "fencelock";
 * import { fromNodeRedis } from "fencelock/node-redis";
 *
 * const client = await createClient({ url: "redis://localhost:6379" })
 *   .on("error", (error) => console.error("redis", error)) // node-redis throws an error event nobody listens to
 *   .connect();
 * const redis = fromNodeRedis(client);
 * const locks = createLocks({ redis, prefix: "jobs" });
 * const store = createFencedStore({ redis, prefix: "jobs" });
 *
 * await locks.withLock("job:42", async (lease) => {
 *   await store.write("job:42", { state: "done" }, lease.fence);
 * });
 * ```
 *
 * A cluster from `createCluster({ rootNodes })` goes in the same way; waiters then hear a release
 * by SSUBSCRIBE on the lock's own node (Redis 7+), or with `fromNodeRedis(cluster, { pubsub: "classic" })` by SUBSCRIBE.
 */
export { fromNodeRedis } from "./tcp/node-redis.ts";
export type { NodeRedisClient, NodeRedisCluster, NodeRedisOptions } from "./tcp/node-redis.ts";
