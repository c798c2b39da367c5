// A fromIoredis client with its acquire attempts and its wake-up streams' events counted.
import type { RedisClient, WakeSubscriber } from "../../../../src/core/client.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";

export interface Seen {
  acquires: number;
  /** Streams opened, confirmed, and the messages they heard (classic and sharded alike). */
  streams: number;
  confirmations: number;
  messages: number;
}

export async function observed(redis: RedisClient): Promise<{ client: RedisClient; seen: Seen }> {
  const acquireSha1 = scriptSha1(scripts.acquire);
  const seen: Seen = { acquires: 0, streams: 0, confirmations: 0, messages: 0 };
  const watched = (open: (channel: string) => WakeSubscriber) => (channel: string): WakeSubscriber => {
    const stream = open(channel);
    seen.streams++;
    stream.on("subscribe", () => seen.confirmations++);
    stream.on("message", () => seen.messages++);
    return stream;
  };
  const client: RedisClient = {
    evalsha: (sha1, keys, args) => ((seen.acquires += sha1 === acquireSha1 ? 1 : 0), redis.evalsha(sha1, keys, args)),
    eval: (script, keys, args) => ((seen.acquires += script === scripts.acquire.text ? 1 : 0), redis.eval(script, keys, args)),
  };
  if (redis.subscribe) client.subscribe = watched(redis.subscribe);
  if (redis.ssubscribe) client.ssubscribe = watched(redis.ssubscribe);
  return { client, seen };
}
