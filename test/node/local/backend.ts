import { inject } from "vitest";
import type { Backend } from "../../../src/local/handler.ts";
import { ConnectionPool } from "../../../src/local/pool.ts";
import { connectRedis, openSubscriber } from "../../../src/local/redis-client.ts";
import { OpenStreams } from "../../../src/local/sse.ts";

/**
 * What startLocalUpstash gives its handler, over the shared test Redis with token "t", for tests
 * that serve the handler themselves (to reach its socket, or shorten the keep-alive). close()
 * ends the streams and drops every connection.
 */
export async function handlerBackend(keepAliveMs?: number): Promise<{ backend: Backend; close(): void }> {
  const { redisUrl } = inject("upstash");
  const redis = await connectRedis(redisUrl);
  const streams = new OpenStreams();
  const pool = new ConnectionPool(() => connectRedis(redisUrl));
  const subscribers = new ConnectionPool(() => openSubscriber(redis));
  const backend: Backend = { redis, pool, subscribers, token: "t", streams, ...(keepAliveMs === undefined ? {} : { keepAliveMs }) };
  const close = () => {
    streams.closeAll();
    subscribers.close();
    pool.close();
    redis.disconnect();
  };
  return { backend, close };
}
