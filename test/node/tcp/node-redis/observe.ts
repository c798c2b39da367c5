// Push wake-ups through an adapter, proven: acquire attempts and delivered wake-up messages counted.
import { expect } from "vitest";
import type { RedisClient, WakeSubscriber } from "../../../../src/core/client.ts";
import { createLocks } from "../../../../src/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { until } from "../../../support/until.ts";

export interface Observed {
  readonly client: RedisClient;
  /** Acquire scripts sent (EVALSHA). */
  readonly acquires: { n: number };
  /** Messages the adapter's streams handed to the lock sets. */
  readonly messages: { n: number };
  /** Streams opened, by kind: classic SUBSCRIBE, or sharded SSUBSCRIBE. */
  readonly opened: { subscribe: number; ssubscribe: number };
}

export async function observe(redis: RedisClient): Promise<Observed> {
  const acquireSha1 = scriptSha1(scripts.acquire);
  const acquires = { n: 0 };
  const messages = { n: 0 };
  const opened = { subscribe: 0, ssubscribe: 0 };
  const counted = (open: (channel: string) => WakeSubscriber, kind: keyof typeof opened) => (channel: string): WakeSubscriber => {
    const stream = open(channel);
    opened[kind]++;
    return {
      on: (type, listener) => stream.on(type, type === "message" ? (event) => (messages.n++, listener(event)) : listener),
      unsubscribe: () => stream.unsubscribe(),
    };
  };
  const client: RedisClient = {
    evalsha: (sha1, keys, args) => (sha1 === acquireSha1 && acquires.n++, redis.evalsha(sha1, keys, args)),
    eval: (script, keys, args) => redis.eval(script, keys, args),
  };
  if (redis.subscribe) client.subscribe = counted(redis.subscribe, "subscribe");
  if (redis.ssubscribe) client.ssubscribe = counted(redis.ssubscribe, "ssubscribe");
  return { client, acquires, messages, opened };
}

/**
 * Waiters on `names` (a lock set each) are handed each lock by the holder's release, by push: after
 * the release they send no acquire of their own, and their lock sets heard one message per lock,
 * on streams of the `pubsub` kind only (a classic stream would hand over too, so it must be asked for).
 */
export async function expectPushHandover(redis: RedisClient, prefix: string, names: readonly string[], pubsub: "sharded" | "classic"): Promise<void> {
  const held = await Promise.all(names.map((name) => createLocks({ redis, prefix }).acquire(name)));
  const { client, acquires, messages, opened } = await observe(redis);
  const waiting = names.map((name) => createLocks({ redis: client, prefix }).acquire(name, { waitMs: 20_000 }));
  // Each waiter's first attempt, and the one after its stream confirmed; the next is a second away.
  await until(async () => acquires.n >= 2 * names.length, 10_000);
  const before = acquires.n;
  await Promise.all(held.map((lease) => lease.release()));
  const leases = await Promise.all(waiting);
  expect(acquires.n).toBe(before);
  expect(messages.n).toBeGreaterThanOrEqual(names.length);
  expect(opened).toEqual(pubsub === "sharded" ? { subscribe: 0, ssubscribe: names.length } : { subscribe: names.length, ssubscribe: 0 });
  leases.forEach((lease, i) => expect(lease.fence).toBeGreaterThan(held[i]!.fence));
  await Promise.all(leases.map((lease) => lease.release()));
}
