// A push stream that ends: the local server says so with an "error" event before it ends a stream
// whose Redis subscriber dropped, but @upstash/redis reports nothing when a stream's body just ends,
// so a server that says nothing leaves the lock set to find out from the handovers it misses.
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

/** A client of the local server whose acquire attempts and streams are recorded; `deaf`: its streams report no errors. */
function recordedClient(server: { url: string; token: string }, deaf = false) {
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
      return { on: (type, listener) => (deaf && type === "error" ? undefined : subscriber.on(type, listener)), unsubscribe: () => subscriber.unsubscribe() };
    },
  };
  /** Resolves once the waiter listens on its stream number `n` and has looked since it confirmed. */
  const listening = (n: number) =>
    until(async () => confirmedAt.length === n && attempts.some((a) => a.answered && a.sentAt > (confirmedAt[n - 1] ?? Infinity)), 10_000);
  return { client, attempts, confirmedAt, listening };
}

/** A private local server over a Redis of its own, a holder's lock set, and a recorded waiter's. */
async function rig(deaf: boolean) {
  const redisServer = await startRedisServer();
  cleanup.push(() => redisServer.stop());
  const server = await startLocalUpstash({ redisUrl: redisServer.url });
  cleanup.push(() => server.close());
  const admin = new IORedis(redisServer.url);
  cleanup.push(async () => admin.disconnect());
  const holder = createLocks({ redis: localRedis({}, server), prefix: "ended" });
  const recorded = recordedClient(server, deaf);
  const waiter = createLocks({ redis: recorded.client, prefix: "ended" });
  /** Releases `held` while `wait` waits, and counts the waiter's looks until it has the lock. */
  const handedOver = async (wait: Promise<Lease>, held: Lease) => {
    const before = recorded.attempts.length;
    await held.release();
    const lease = await wait;
    return { lease, looks: recorded.attempts.length - before };
  };
  /** Drops the local server's subscriber connections, which ends their streams. */
  const killSubscribers = async () => {
    await admin.client("KILL", "TYPE", "pubsub");
    await until(async () => (await admin.pubsub("CHANNELS")).length === 0, 5_000);
  };
  return { holder, waiter, handedOver, killSubscribers, ...recorded };
}

it("a stream the local server ends because its Redis subscriber dropped is replaced at once: the next handover is by message", async () => {
  const { holder, waiter, handedOver, killSubscribers, listening } = await rig(false);
  const held = await holder.acquire("gate");
  const waiting = waiter.acquire("gate", { waitMs: 20_000 });
  await listening(1);
  await killSubscribers();
  // The server's "error" event failed the stream: another opened within the same wait.
  await listening(2);
  const next = await handedOver(waiting, held);
  expect(next.looks).toBe(0);
  expect(next.lease.fence).toBeGreaterThan(held.fence);
  await next.lease.release();
});

it("a stream that ended without a word is replaced once two handovers' messages fail to come, and the next handover is by message", async () => {
  const { holder, waiter, handedOver, killSubscribers, listening, confirmedAt } = await rig(true);
  let held = await holder.acquire("gate");
  let waiting = waiter.acquire("gate", { waitMs: 20_000 });
  await listening(1);
  await killSubscribers();
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
