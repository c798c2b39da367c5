// A push stream that ends without a word: @upstash/redis reports nothing when an event stream's
// body ends, as the local server's does when its Redis subscriber connection drops (Redis or the
// server restarted, CLIENT KILL). The lock set must not wait on it for a minute.
import { Redis as IORedis } from "ioredis";
import { afterEach, expect, it } from "vitest";
import { createLocks, type Lease, type RedisClient } from "../../../../src/index.ts";
import { startLocalUpstash, startRedisServer } from "../../../../src/local/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { localRedis } from "../../../support/local-client.ts";
import { until } from "../../../support/until.ts";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A client of the local server whose acquire attempts and streams are recorded. */
function recordedClient(server: { url: string; token: string }) {
  const real = localRedis({}, server);
  const acquireSha1 = scriptSha1(scripts.acquire);
  const attempts: { sentAt: number; answered: boolean }[] = [];
  const confirmedAt: number[] = [];
  const client: RedisClient = {
    async evalsha(sha, keys, args) {
      const attempt = { sentAt: performance.now(), answered: false };
      if (sha === acquireSha1) attempts.push(attempt);
      const reply = await real.evalsha(sha, keys, args);
      attempt.answered = true;
      return reply;
    },
    eval: (script, keys, args) => real.eval(script, keys, args),
    subscribe(channel) {
      const subscriber = real.subscribe(channel);
      subscriber.on("subscribe", () => confirmedAt.push(performance.now()));
      return subscriber;
    },
  };
  /** Resolves once the waiter listens on its stream number `n` and has looked since it confirmed. */
  const listening = (n: number) =>
    until(async () => confirmedAt.length === n && attempts.some((a) => a.answered && a.sentAt > (confirmedAt[n - 1] ?? Infinity)), 10_000);
  return { client, attempts, confirmedAt, listening };
}

it("a stream that ended unseen is replaced once two handovers' messages fail to come, and the next handover is by message", async () => {
  const redisServer = await startRedisServer();
  cleanup.push(() => redisServer.stop());
  const server = await startLocalUpstash({ redisUrl: redisServer.url });
  cleanup.push(() => server.close());
  const admin = new IORedis(redisServer.url);
  cleanup.push(async () => admin.disconnect());
  const holder = createLocks({ redis: localRedis({}, server), prefix: "ended" });
  const { client, attempts, confirmedAt, listening } = recordedClient(server);
  const waiter = createLocks({ redis: client, prefix: "ended" });
  const handedOver = async (wait: Promise<Lease>, held: Lease) => {
    const before = attempts.length;
    await held.release();
    const lease = await wait;
    return { lease, looks: attempts.length - before };
  };

  let held = await holder.acquire("gate");
  let waiting = waiter.acquire("gate", { waitMs: 20_000 });
  await listening(1);
  // The local server's subscriber connection drops; it ends the event stream, and the client says nothing.
  await admin.client("KILL", "TYPE", "pubsub");
  await until(async () => (await admin.pubsub("CHANNELS")).length === 0, 5_000);
  // Twice, its look (within a second) found the lock its own: the message was lost. One such look
  // alone may be a waiter that left holding a handover; two with no message between are a dead stream.
  for (let round = 0; round < 2; round++) {
    const missed = await handedOver(waiting, held);
    expect(missed.looks).toBe(1);
    await missed.lease.release();
    held = await holder.acquire("gate");
    waiting = waiter.acquire("gate", { waitMs: 20_000 });
  }
  // A new stream, not the dead one kept for a minute.
  await listening(2);
  const next = await handedOver(waiting, held);
  expect(next.looks).toBe(0);
  expect(next.lease.fence).toBeGreaterThan(held.fence);
  await next.lease.release();
  expect(confirmedAt).toHaveLength(2);
});
