/**
 * @module
 * fencelock/ioredis (Node only): fencelock over an ioredis client, standalone, Sentinel or Cluster.
 * Install ioredis yourself (an optional peer); the core (fencelock) never imports it.
 *
 * @example
 * import { Redis } from "ioredis";
 * import { createLocks } from "fencelock";
 * import { fromIoredis } from "fencelock/ioredis";
 *
 * const locks = createLocks({ redis: fromIoredis(new Redis("redis://127.0.0.1:6379")), prefix: "app" });
 * await locks.withLock("order:42", async (lease) => chargeCard(order, { fence: lease.fence }));
 */
export { fromIoredis } from "./tcp/ioredis.ts";
export type { IoredisOptions } from "./tcp/ioredis.ts";
