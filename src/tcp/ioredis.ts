// fromIoredis: an ioredis Redis, Sentinel or Cluster client as fencelock's RedisClient.
import type { Cluster, Redis } from "ioredis";
import type { RedisClient } from "../core/client.ts";
import { LockConfigError } from "../core/errors.ts";
import { clusterRouter, serverRouter, SubscriberGroup, type PubSub, type Router } from "./ioredis-pubsub.ts";
import { isNodeRedis4, notTheClient, pubsubOf, subscriberModeOr, type AdapterOptions } from "./options.ts";
import { withNumbers } from "./reply.ts";
import { subscriberOf } from "./shared-subscriber.ts";

/** fromIoredis's options: `pubsub` for a Cluster. */
export type IoredisOptions = AdapterOptions;

/**
 * An ioredis client (`new Redis(...)`, with `sentinels` too, or `new Cluster(...)`) as the
 * `redis` of createLocks and createFencedStore. Scripts run on the client itself; push wake-ups
 * use subscriber connections of their own (one, or on a Cluster one per master in use), shared by
 * every fromIoredis() of the client, opened while someone waits and closed 2 s after.
 *
 * @example
 * const locks = createLocks({ redis: fromIoredis(new Redis("redis://127.0.0.1:6379")), prefix: "app" });
 */
export function fromIoredis(client: Redis | Cluster, options?: IoredisOptions): RedisClient {
  checkClient(client);
  const cluster = isCluster(client);
  const pubsub = pubsubOf(options, cluster, "fromIoredis");
  // ioredis takes the number of keys, then keys and arguments in one list.
  const read = (sent: Promise<unknown>) => sent.then(withNumbers, (error: unknown) => {
    // Known only once it failed: right after quit() the status still reads "ready".
    throw client.status === "end" ? closed() : subscriberModeOr(error, "ioredis client");
  });
  const redis: RedisClient = {
    evalsha: (sha1, keys, args) => read(client.evalsha(sha1, keys.length, ...keys, ...args)),
    eval: (script, keys, args) => read(client.eval(script, keys.length, ...keys, ...args)),
  };
  if (!cluster) return { ...redis, subscribe: shared(client, "classic", () => serverRouter(client)) };
  const classic = shared(client, "classic", () => clusterRouter(client, "classic"));
  // A key prefix with braces would move the lock keys' slot, and release.lua's shard channel with it.
  if (pubsub === "classic" || /[{}]/.test(client.options.keyPrefix ?? "")) return { ...redis, subscribe: classic };
  return { ...redis, subscribe: classic, ssubscribe: shared(client, "sharded", () => clusterRouter(client, "sharded")) };
}

/** Every fromIoredis() of one client shares its subscriber connections. */
function shared(client: Redis | Cluster, pubsub: PubSub, router: () => Router) {
  return subscriberOf(client, pubsub, () => new SubscriberGroup(router(), pubsub));
}

/** A client that will not reconnect is the app's to fix: checking on Redis would not help. */
function closed(): LockConfigError {
  return new LockConfigError("ioredis client", [
    "it is closed: quit() or disconnect() was called, or its retryStrategy gave up reconnecting; keep it open while its locks are used",
  ]);
}

function isCluster(client: Redis | Cluster): client is Cluster {
  return (client as { isCluster?: unknown }).isCluster === true;
}

/** Throws a LockConfigError that says what to pass, for anything but an ioredis client. */
function checkClient(client: unknown): asserts client is Redis | Cluster {
  const has = (method: string) => typeof (client as Record<string, unknown> | null | undefined)?.[method] === "function";
  // node-redis 4 in legacyMode has all four.
  if (isNodeRedis4(client) || !(has("evalsha") && has("eval") && has("duplicate") && has("on"))) throw notTheClient(client, "fromIoredis");
}
