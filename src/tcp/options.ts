// What both TCP adapters take: their options, and what to say about a client that is not theirs.
import * as z from "zod/mini";
import { LockConfigError } from "../core/errors.ts";
import { parseOptions } from "../core/options.ts";

const optionsSchema = z.strictObject({
  /**
   * Redis Cluster: how waiters hear a release. "sharded" (the default, Redis 7+): SSUBSCRIBE on the
   * node of the lock's slot. "classic": SUBSCRIBE, whose messages every node relays (Redis 6).
   */
  pubsub: z.optional(z.enum(["sharded", "classic"], 'expected "sharded" or "classic"')),
}, 'expected an options object such as { pubsub: "classic" }');

export type AdapterOptions = z.input<typeof optionsSchema>;

/** The pub/sub a client's waiters use: a cluster's is sharded unless told otherwise; a single server has only classic. */
export function pubsubOf(options: unknown, cluster: boolean, adapter: string): "sharded" | "classic" {
  const { pubsub = cluster ? "sharded" : "classic" } = parseOptions(optionsSchema, options, `${adapter} options`);
  if (pubsub === "sharded" && !cluster) {
    throw new LockConfigError(`${adapter} options`, ['pubsub: "sharded" is for a Cluster client; a single server has classic pub/sub only']);
  }
  return pubsub;
}

/** A LockConfigError for what was passed instead of a client of `adapter`'s, saying what to do with it. */
export function notTheClient(client: unknown, adapter: "fromIoredis" | "fromNodeRedis"): LockConfigError {
  const has = (method: string) => typeof (client as Record<string, unknown> | null | undefined)?.[method] === "function";
  const issue = adapter === "fromIoredis" && has("evalSha")
    ? "this looks like a client of the redis package (node-redis): use fromNodeRedis from fencelock/node-redis"
    : adapter === "fromNodeRedis" && has("evalsha") && has("duplicate")
    ? "this looks like an ioredis client: use fromIoredis from fencelock/ioredis"
    : has("evalsha")
    ? `this looks like an @upstash/redis client, or one ${adapter}() already made: pass it to createLocks as it is`
    : adapter === "fromIoredis"
    ? 'expected an ioredis client: new Redis(url) or new Cluster(nodes)'
    : "expected a client from createClient() or createCluster() of the redis package, connected";
  return new LockConfigError(`${adapter} client`, [issue]);
}

/** A failed SSUBSCRIBE, with what to do when the server has no sharded pub/sub (before Redis 7). */
export function shardedRefused(error: unknown, adapter: "fromIoredis" | "fromNodeRedis"): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (!/unknown command/i.test(message)) return error instanceof Error ? error : new Error(message);
  return new Error(`${message}: sharded pub/sub needs Redis 7 or later; pass ${adapter}(cluster, { pubsub: "classic" })`);
}
