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

/**
 * A node-redis 4 client: no withTypeMapping, and in legacyMode its own commands under `v4` (read by
 * `in`: outside legacyMode, reading it throws), the rest looking like ioredis'.
 */
export function isNodeRedis4(client: unknown): boolean {
  if (typeof client !== "object" || client === null) return false;
  const has = (method: string) => typeof (client as Record<string, unknown>)[method] === "function";
  return !has("withTypeMapping") && ("v4" in client || (has("evalSha") && has("sendCommand")));
}

/** A LockConfigError for what was passed instead of a client of `adapter`'s, saying what to do with it. */
export function notTheClient(client: unknown, adapter: "fromIoredis" | "fromNodeRedis"): LockConfigError {
  const has = (method: string) => typeof (client as Record<string, unknown> | null | undefined)?.[method] === "function";
  const issue = isNodeRedis4(client)
    ? `this looks like a node-redis 4 client (redis@4, or its legacyMode): upgrade the redis package to 6.0.1 or later${adapter === "fromIoredis" ? " and use fromNodeRedis" : ""}`
    : adapter === "fromIoredis" && has("evalSha")
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

/** A client the app subscribed with answers only pub/sub commands, for good: the app's to fix, not a Redis to check on. */
export function subscriberModeOr(error: unknown, what: "ioredis client" | "node-redis client"): unknown {
  if (!/subscriber mode|only \(P\|S\)SUBSCRIBE/.test(String((error as Error | undefined)?.message))) return error;
  return new LockConfigError(what, [
    "it is in subscriber mode (subscribe() was called on it): pass a client that is not subscribed; fencelock opens subscriber connections of its own",
  ]);
}

/** A failed SSUBSCRIBE, with what to do when the server has no sharded pub/sub (before Redis 7). */
export function shardedRefused(error: unknown, adapter: "fromIoredis" | "fromNodeRedis"): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (!/unknown command/i.test(message)) return error instanceof Error ? error : new Error(message);
  return new Error(`${message}: sharded pub/sub needs Redis 7 or later; pass ${adapter}(cluster, { pubsub: "classic" })`);
}
