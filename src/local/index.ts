import { createHandler } from "./handler.ts";
import { checkLocalOptions } from "./options.ts";
import { ConnectionPool } from "./pool.ts";
import { connectRedis, openSubscriber } from "./redis-client.ts";
import { startRedisServer } from "./redis-server.ts";
import { listen } from "./server.ts";
import { OpenStreams } from "./sse.ts";

export { startRedisServer } from "./redis-server.ts";
export type { RedisServer, RedisServerOptions } from "./redis-server.ts";
export {
  LocalUpstashError,
  RedisServerNotFoundError,
  RedisServerStartError,
  RedisUnavailableError,
} from "./errors.ts";

export interface LocalUpstashOptions {
  /** Use this Redis; default: start a private redis-server, stopped again by close(). */
  redisUrl?: string;
  /** HTTP port; default: a free port. */
  port?: number;
  /** HTTP bind address; default 127.0.0.1. */
  host?: string;
  /** Bearer token clients must send; default: 192 random bits. */
  token?: string;
}

export interface LocalUpstash {
  url: string;
  token: string;
  redisUrl: string;
  close(): Promise<void>;
}

/** Idle subscription connections kept for the next streams: a push waiter opens one per wait. */
const MAX_IDLE_SUBSCRIBERS = 16;

/** Starts an Upstash-REST-compatible HTTP server in front of Redis, for `new Redis({ url, token })`. */
export async function startLocalUpstash(options: LocalUpstashOptions = {}): Promise<LocalUpstash> {
  options = checkLocalOptions(options);
  const backing = await backingRedis(options.redisUrl);
  const token = options.token ?? randomToken();
  const pool = new ConnectionPool(() => connectRedis(backing.url));
  try {
    const redis = await connectRedis(backing.url);
    const streams = new OpenStreams();
    const subscribers = new ConnectionPool(() => openSubscriber(redis), MAX_IDLE_SUBSCRIBERS);
    const handler = createHandler({ redis, pool, subscribers, token, streams });
    const http = await listen(handler, options.host ?? "127.0.0.1", options.port ?? 0)
      .catch((error: unknown) => {
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
    return { url: http.url, token, redisUrl: backing.url, close };
  } catch (error) {
    await backing.stop?.();
    throw error;
  }
}

/** The Redis behind the server: the caller's, or a private redis-server that close() stops. */
async function backingRedis(redisUrl?: string): Promise<{ url: string; stop?: () => Promise<void> }> {
  return redisUrl === undefined ? startRedisServer() : { url: redisUrl };
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Buffer.from(bytes).toString("base64url");
}
