// fromIoredis: an ioredis Redis, Sentinel or Cluster client as fencelock's RedisClient.
import type { Cluster, Redis } from "ioredis";
import * as z from "zod/mini";
import type { RedisClient } from "../core/client.ts";
import { LockConfigError } from "../core/errors.ts";
import { parseOptions } from "../core/options.ts";
import { clusterRouter, serverRouter, SubscriberGroup, type PubSub, type Router } from "./ioredis-pubsub.ts";
import { withNumbers } from "./reply.ts";
import { sharedSubscriber } from "./shared-subscriber.ts";

const optionsSchema = z.strictObject({
  /**
   * Redis Cluster: how push wake-ups travel. "sharded" (the default, Redis 7+): SSUBSCRIBE on the
   * node that holds the lock's slot. "classic": SUBSCRIBE, which every node relays (Redis 6).
   */
  pubsub: z.optional(z.enum(["sharded", "classic"], 'expected "sharded" or "classic"')),
}, "expected an options object");

export type IoredisOptions = z.input<typeof optionsSchema>;

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
  const { pubsub } = parseOptions(optionsSchema, options, "fromIoredis options");
  const cluster = isCluster(client);
  if (!cluster && pubsub) {
    throw new LockConfigError("fromIoredis options", ["pubsub: only for a Cluster client; a single Redis has one kind of pub/sub"]);
  }
  // ioredis takes the number of keys, then keys and arguments in one list.
  const redis: RedisClient = {
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args).then(withNumbers),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args).then(withNumbers),
  };
  if (!cluster) return { ...redis, subscribe: shared(client, "classic", () => serverRouter(client)) };
  const classic = shared(client, "classic", () => clusterRouter(client, "classic"));
  if ((pubsub ?? "sharded") === "classic") return { ...redis, subscribe: classic };
  return { ...redis, subscribe: classic, ssubscribe: shared(client, "sharded", () => clusterRouter(client, "sharded")) };
}

type Subscribe = NonNullable<RedisClient["subscribe"]>;

/** Per client, so that every fromIoredis() of one client shares its subscriber connections. */
const subscribers = new WeakMap<Redis | Cluster, Map<PubSub, Subscribe>>();

/** All wake-up streams of one kind on one group of connections, opened on first use. */
function shared(client: Redis | Cluster, pubsub: PubSub, router: () => Router): Subscribe {
  const kinds = subscribers.get(client) ?? new Map<PubSub, Subscribe>();
  subscribers.set(client, kinds);
  const subscribe = kinds.get(pubsub) ?? sharedSubscriber(() => new SubscriberGroup(router(), pubsub));
  kinds.set(pubsub, subscribe);
  return subscribe;
}

function isCluster(client: Redis | Cluster): client is Cluster {
  return (client as { isCluster?: unknown }).isCluster === true;
}

/** Throws a LockConfigError that says what to pass, for anything but an ioredis client. */
function checkClient(client: unknown): asserts client is Redis | Cluster {
  const has = (method: string) => typeof (client as Record<string, unknown> | null | undefined)?.[method] === "function";
  if (has("evalsha") && has("eval") && has("duplicate") && has("on")) return;
  const issue = has("evalSha")
    ? "this looks like a client of the redis package (node-redis): use fencelock/node-redis for it"
    : has("evalsha")
    ? "this looks like an @upstash/redis client, or one fromIoredis() already made: pass it to createLocks as it is"
    : 'expected an ioredis client: new Redis(url) or new Cluster(nodes) from "ioredis"';
  throw new LockConfigError("fromIoredis client", [issue]);
}
