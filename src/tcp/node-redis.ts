// fromNodeRedis: a client or cluster of the official `redis` package as fencelock's RedisClient.
import type { RedisClient } from "../core/client.ts";
import { LockConfigError } from "../core/errors.ts";
import { notTheClient, pubsubOf, subscriberModeOr, type AdapterOptions } from "./options.ts";
import { withNumbers } from "./reply.ts";
import { clusterConnection, duplicateConnection } from "./node-redis-pubsub.ts";
import { subscriberOf } from "./shared-subscriber.ts";

/** Text unless subscribed in buffer mode, which fencelock never asks for; the types allow both. */
export type MessageListener = (message: string | Uint8Array, channel: string | Uint8Array) => void;
type ScriptOptions = { keys: string[]; arguments: string[] };

/** The script calls of a node-redis client or cluster. */
interface ScriptCalls {
  evalSha(sha1: string, options: ScriptOptions): Promise<unknown>;
  eval(script: string, options: ScriptOptions): Promise<unknown>;
}

interface Events {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

interface PubSub extends Events {
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string, listener: MessageListener): Promise<unknown>;
}

/** What fencelock uses of a client from `createClient()` (redis 6). */
export interface NodeRedisClient extends ScriptCalls, PubSub {
  readonly isOpen: boolean;
  withTypeMapping(mapping: Record<string, never>): ScriptCalls;
  duplicate(): PubSub & { connect(): Promise<unknown>; destroy(): void; ping(): Promise<unknown> };
}

/** What fencelock uses of a cluster from `createCluster()` (redis 6). */
export interface NodeRedisCluster extends NodeRedisClient {
  sSubscribe(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe(channel: string, listener: MessageListener): Promise<unknown>;
  /** Not called: a cluster has it and a client has not. */
  nodeClient(node: never): unknown;
}

/** fromNodeRedis's options: `pubsub` for a cluster. */
export type NodeRedisOptions = AdapterOptions;

/**
 * A node-redis client or cluster, connected, as the `redis` of createLocks and createFencedStore:
 * scripts by EVALSHA on it, replies read whatever its RESP version and type mapping, and push
 * wake-ups on subscriber connections of their own, opened while someone waits and closed 2 s after.
 *
 * @example
 * const locks = createLocks({ redis: fromNodeRedis(await createCluster({ rootNodes }).connect()), prefix: "app" });
 */
export function fromNodeRedis(redis: NodeRedisClient | NodeRedisCluster, options?: NodeRedisOptions): RedisClient {
  checkClient(redis);
  const cluster = isCluster(redis) ? redis : undefined;
  const pubsub = pubsubOf(options, cluster !== undefined, "fromNodeRedis");
  // The default mapping, whatever the client's own: integers as numbers, text as strings (not Buffers).
  const scripts = redis.withTypeMapping({});
  const run = (call: () => Promise<unknown>) => (redis.isOpen ? retriedWhileMoving(call).then(withNumbers, (error: unknown) => {
    throw subscriberModeOr(error, "node-redis client");
  }) : notConnected());
  const client: RedisClient = {
    evalsha: (sha1, keys, args) => run(() => scripts.evalSha(sha1, { keys, arguments: args })),
    eval: (script, keys, args) => run(() => scripts.eval(script, { keys, arguments: args })),
    subscribe: subscriberOf(redis, "classic", () => (cluster ? clusterConnection(cluster, false) : duplicateConnection(redis))),
  };
  if (pubsub === "sharded" && cluster) client.ssubscribe = subscriberOf(redis, "sharded", () => clusterConnection(cluster, true));
  return client;
}

function isCluster(redis: NodeRedisClient | NodeRedisCluster): redis is NodeRedisCluster {
  return typeof (redis as Partial<NodeRedisCluster>).nodeClient === "function";
}

/** Throws a LockConfigError that says what to pass, for anything but a node-redis client or cluster. */
function checkClient(redis: unknown): asserts redis is NodeRedisClient | NodeRedisCluster {
  const has = (method: string) => typeof (redis as Record<string, unknown> | null | undefined)?.[method] === "function";
  if (!["evalSha", "eval", "withTypeMapping", "subscribe", "duplicate", "on"].every(has)) throw notTheClient(redis, "fromNodeRedis");
  // Its scripts work, but its pub/sub needs a node chosen first: push waits would fail, cryptically.
  if (has("getSentinelNode")) {
    throw new LockConfigError("fromNodeRedis client", ["a node-redis Sentinel client (createSentinel) is not supported: for Sentinel, use fromIoredis(new Redis({ sentinels, name }))"]);
  }
}

/** As ioredis does: TRYAGAIN every 100 ms, 16 times at most. */
const TRYAGAIN_MS = 100;
const TRYAGAIN_TIMES = 16;

/**
 * A script call, sent again on TRYAGAIN (its slot is moving and some of its keys are not here yet, so
 * the script did not run), which node-redis does not retry. After a timeout, giveBackAfter waits for this to end.
 */
async function retriedWhileMoving(call: () => Promise<unknown>): Promise<unknown> {
  for (let tries = 1; ; tries++) {
    try {
      return await call();
    } catch (error) {
      if (tries === TRYAGAIN_TIMES || !String((error as Error | undefined)?.message).startsWith("TRYAGAIN")) throw error;
      await new Promise((resolve) => setTimeout(resolve, TRYAGAIN_MS));
    }
  }
}

function notConnected(): Promise<never> {
  return Promise.reject(new LockConfigError("node-redis client", ["it is not connected (call await client.connect() before the first lock call, and close it after the last)"]));
}
