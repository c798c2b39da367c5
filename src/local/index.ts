// fencelock/local (Node only): an Upstash-REST-compatible server in front of Redis, for development and tests.
import { createHandler } from "./handler.ts";
import { checkLocalOptions, type CheckedLocalOptions } from "./options.ts";
import { ConnectionPool } from "./pool.ts";
import { randomSecret, startPrivateRedis, type BackingRedis } from "./private-redis.ts";
import { connectRedis, openSubscriber, redactUrl, refuseClusterOrSentinel } from "./redis-client.ts";
import { listen } from "./server.ts";
import { OpenStreams } from "./sse.ts";

export { startRedisServer } from "./redis-server.ts";
export type { RedisServer, RedisServerOptions } from "./redis-server.ts";
export {
  LocalUpstashError,
  RedisServerNotFoundError,
  RedisClusterError,
  RedisSentinelError,
  RedisServerStartError,
  RedisUnavailableError,
} from "./errors.ts";

export interface LocalUpstashOptions {
  /**
   * Use this Redis; default: start a private redis-server, stopped again by close(). A Redis
   * Cluster node is refused (RedisClusterError): the server speaks to one Redis.
   */
  redisUrl?: string;
  /** HTTP port; default: a free port. */
  port?: number;
  /** HTTP bind address; default 127.0.0.1. */
  host?: string;
  /** Bearer token clients must send; default: 192 random bits. */
  token?: string;
  /** Run CONFIG, DEBUG, SHUTDOWN, ACL, MIGRATE... too (default false: refused with an error reply). */
  allowAdminCommands?: boolean;
  /** Open HTTP connections; more are answered 503 (default 1024). */
  maxConnections?: number;
  /** Open /subscribe and /psubscribe streams, each holding a Redis connection; more get 503 (default 256). */
  maxStreams?: number;
  /** A connection that has not sent a request's headers in this time is closed (default 10 s). */
  headersTimeoutMs?: number;
  /** A connection that has not sent a whole request in this time is closed (default 30 s). */
  requestTimeoutMs?: number;
}

export interface LocalUpstash {
  url: string;
  token: string;
  /** The Redis behind it; the private one's carries its password: redis://:<password>@127.0.0.1:<port>. */
  redisUrl: string;
  /**
   * Resolves, saying how, if the private redis-server ends before close() (killed, crashed): the
   * server then answers every command 503 until closed. Never, with `redisUrl`.
   */
  redisExited: Promise<string>;
  close(): Promise<void>;
}

/** Idle subscription connections kept for the next streams: a push waiter opens one per wait. */
const MAX_IDLE_SUBSCRIBERS = 16;

/** Starts an Upstash-REST-compatible HTTP server in front of Redis, for `new Redis({ url, token })`. */
export async function startLocalUpstash(options: LocalUpstashOptions = {}): Promise<LocalUpstash> {
  const checked = checkLocalOptions(options);
  const { redisUrl, token = randomSecret(), allowAdminCommands, maxStreams } = checked;
  const backing: BackingRedis = redisUrl === undefined ? await startPrivateRedis(allowAdminCommands) : { url: redisUrl };
  const pool = new ConnectionPool(() => connectRedis(backing.url));
  try {
    const redis = await connectRedis(backing.url);
    // At start, rather than as MOVED or "unknown command" on requests later.
    if (redisUrl !== undefined) {
      await refuseClusterOrSentinel(redis, redactUrl(redisUrl)).catch((error: unknown) => {
        redis.disconnect();
        throw error;
      });
    }
    const streams = new OpenStreams(maxStreams);
    const subscribers = new ConnectionPool(() => openSubscriber(redis), MAX_IDLE_SUBSCRIBERS);
    const handler = createHandler({ redis, pool, subscribers, token, streams, allowAdminCommands });
    const http = await listen(handler, listenOptions(checked)).catch((error: unknown) => {
      redis.disconnect();
      throw error;
    });
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        streams.closeAll(); // ends each event stream cleanly before the sockets are cut
        await http.close();
        pool.close();
        subscribers.close();
        redis.disconnect();
        await backing.stop?.();
      })());
    const redisExited = new Promise<string>((resolve) => backing.exited?.then((how) => closing ?? resolve(how)));
    return { url: http.url, token, redisUrl: backing.url, redisExited, close };
  } catch (error) {
    await backing.stop?.();
    throw error;
  }
}

function listenOptions({ host, port, maxConnections, headersTimeoutMs, requestTimeoutMs }: CheckedLocalOptions) {
  return { host, port, maxConnections, headersTimeoutMs, requestTimeoutMs };
}
