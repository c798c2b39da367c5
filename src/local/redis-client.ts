// ioredis connections for the local server: fail fast during an outage, say why a connect failed.
import { Redis, type RedisOptions } from "ioredis";
import { RedisClusterError, RedisSentinelError } from "./errors.ts";
import { noReplyFailure, startupFailure } from "./redis-failure.ts";

const RECONNECT_DELAY_MS = 100;
/** From the TCP connect to the ready check's answer. */
const READY_TIMEOUT_MS = 3_000;
/** The CLIENT LIST name of subscription connections, so a leak is easy to spot. */
export const SUBSCRIBER_NAME = "fencelock-local-subscriber";

const FAIL_FAST: RedisOptions = {
  lazyConnect: true,
  connectionName: "fencelock-local",
  connectTimeout: 1_000,
  // During an outage a request fails at once (HTTP 503) instead of waiting in ioredis' queue.
  enableOfflineQueue: false,
  // Commands in flight when the connection drops fail instead of being replayed after the
  // reconnect: a replayed write could apply twice, and the HTTP caller has given up by then.
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  // Retry forever at a short, fixed interval so a redis-server restarted on the same port is
  // used again within ~100 ms (the default backoff grows to 2 s).
  retryStrategy: () => RECONNECT_DELAY_MS,
  // disconnect() on a connection whose Redis has gone arms a timer of this length (default 2 s)
  // that would keep the process alive after close().
  disconnectTimeout: 10,
  // Integer replies as their digits: ioredis' parser builds numbers digit by digit in floating
  // point, which is off by thousands near 2^63; see reply.ts for how they are sent on.
  stringNumbers: true,
};

/** Opens an ioredis connection and waits until it is ready; RedisUnavailableError when it cannot. */
export async function connectRedis(url: string): Promise<Redis> {
  return ready(new Redis(url, FAIL_FAST), redactUrl(url));
}

/**
 * A connection for subscription streams, one at a time, with the options of `redis`. It never
 * reconnects: ioredis would resubscribe by itself, but whatever was published while it was
 * down would be lost without the client knowing, so the stream ends instead and the client
 * (which treats the end as done) can subscribe again.
 */
export function openSubscriber(redis: Redis): Promise<Redis> {
  const { host, port, path } = redis.options;
  const subscriber = redis.duplicate({ connectionName: SUBSCRIBER_NAME, retryStrategy: () => null });
  return ready(subscriber, path ?? `redis://${host}:${port}`);
}

async function ready(redis: Redis, where: string): Promise<Redis> {
  // Outages surface per request as HTTP 503; without a listener ioredis logs every failed
  // reconnect. The last error is kept because it says why connect() failed.
  let lastError: unknown;
  redis.on("error", (error: unknown) => (lastError = error));
  // connectTimeout covers only the TCP connect: a peer that accepts but never answers (a paused
  // redis-server, another service on the port) would keep connect() pending for good.
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    redis.disconnect(); // makes connect() reject
  }, READY_TIMEOUT_MS);
  try {
    await redis.connect();
    return redis;
  } catch (error) {
    redis.disconnect();
    throw timedOut ? noReplyFailure(where, READY_TIMEOUT_MS) : startupFailure(where, lastError ?? error);
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * Throws RedisClusterError for a Redis Cluster node, RedisSentinelError for a Sentinel. A Redis that
 * refuses INFO (an ACL without it) counts as standalone: a Cluster node would still show itself with
 * MOVED per request.
 */
export async function refuseClusterOrSentinel(redis: Redis, where: string): Promise<void> {
  const info = await redis.info().catch(() => "");
  if (/^redis_mode:sentinel\b/m.test(info)) throw new RedisSentinelError(where);
  if (/^cluster_enabled:1\b/m.test(info)) throw new RedisClusterError(where);
}

/** An error reply from Redis itself (as opposed to a connection problem). */
export function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === "ReplyError";
}

/** The Redis URL for messages, its password masked; a Unix socket path (no password) as it is. */
export function redactUrl(url: string): string {
  if (url.startsWith("/")) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<invalid Redis URL>";
  }
}
