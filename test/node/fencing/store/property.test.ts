import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, StaleFenceError, type RedisClient } from "../../../../src/index.ts";
import type { Redis } from "@upstash/redis";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/**
 * Clients increment a counter by read-modify-write under the lock while the scheduler
 * delays every request and every response, and a chaos task expires the lease at random
 * moments (a holder paused past its lease). Each accepted write appends its fence to the
 * value, so a lost update or a stale write accepted is visible in the final value.
 */
interface Counter {
  count: number;
  fences: number[];
}

interface Plan {
  clients: number;
  increments: number;
  expiries: number;
}

interface Stats {
  requests: number;
  inFlight: number;
  /** Resolves the driver's wait once the request in flight has its reply. */
  settled: () => void;
}

type Strategy = "claim+fenced write" | "fenced write only" | "unfenced write";

const plan: fc.Arbitrary<Plan> = fc.record({
  clients: fc.integer({ min: 2, max: 4 }),
  increments: fc.integer({ min: 1, max: 4 }),
  expiries: fc.integer({ min: 0, max: 6 }),
});

/** Puts every request and every response of a client through the scheduler, one at a time. */
function scheduled(redis: Redis, s: fc.Scheduler, stats: Stats): RedisClient {
  const gate = async <T>(call: () => Promise<T>): Promise<T> => {
    await s.schedule(Promise.resolve(), "request");
    stats.requests++;
    stats.inFlight++;
    const reply = await call().finally(() => {
      stats.inFlight--;
      stats.settled();
    });
    await s.schedule(Promise.resolve(), "response");
    return reply;
  };
  return {
    evalsha: (sha, keys, args) => gate(() => redis.evalsha(sha, keys, args)),
    eval: (script, keys, args) => gate(() => redis.eval(script, keys, args)),
  };
}

/** Releases one scheduled step at a time, only once the previous step's real I/O has finished. */
async function drive(s: fc.Scheduler, work: Promise<unknown>, stats: Stats): Promise<void> {
  let finished = false;
  void work.finally(() => (finished = true));
  while (!finished) {
    if (stats.inFlight > 0) await new Promise<void>((resolve) => (stats.settled = resolve));
    else if (s.count() > 0) await s.waitNext(1);
    else await new Promise((resolve) => setImmediate(resolve));
  }
  await work;
}

async function runScenario(redis: Redis, strategy: Strategy, s: fc.Scheduler, p: Plan, stats: Stats) {
  const prefix = uniquePrefix("prop");
  const client = scheduled(redis, s, stats);
  const locks = createLocks({ redis: client, prefix, leaseMs: 60_000 });
  const store = createFencedStore({ redis: client, prefix });
  const dataKey = `${prefix}:{counter}:data`;
  await redis.hset(dataKey, { fence: "1", value: JSON.stringify({ count: 0, fences: [] }) });
  let accepted = 0;

  const read = async (fence: number) =>
    (strategy === "claim+fenced write" ? await store.read<Counter>("counter", { fence }) : await store.read<Counter>("counter"))?.value;
  const write = async (value: Counter, fence: number) => {
    if (strategy === "unfenced write") await client.eval("redis.call('HSET', KEYS[1], 'value', ARGV[1]) return {1}", [dataKey], [JSON.stringify(value)]);
    else await store.write("counter", value, fence);
  };

  const increment = async () => {
    let lease = null;
    for (let tries = 0; tries < 50 && !lease; tries++) lease = await locks.tryAcquire("counter");
    if (!lease) return;
    try {
      const current = (await read(lease.fence)) ?? { count: 0, fences: [] };
      await write({ count: current.count + 1, fences: [...current.fences, lease.fence] }, lease.fence);
      accepted++;
    } catch (error) {
      if (!(error instanceof StaleFenceError)) throw error;
    }
    await lease.release();
  };
  const clientTask = async () => {
    for (let i = 0; i < p.increments; i++) await increment();
  };
  const chaos = async () => {
    for (let i = 0; i < p.expiries; i++) {
      await s.schedule(Promise.resolve(), "lease expires");
      await redis.pexpire(`${prefix}:{counter}:lock`, 0);
    }
  };
  await drive(s, Promise.all([...Array.from({ length: p.clients }, clientTask), chaos()]), stats);
  const final = (await redis.hget<Counter>(dataKey, "value")) as Counter;
  return { accepted, final };
}

/** Runs the property; returns how many runs broke it (a stale write accepted or an increment lost). */
async function violations(strategy: Strategy, numRuns: number) {
  const stats: Stats = { requests: 0, inFlight: 0, settled: () => undefined };
  const redis = upstash({ retry: { retries: 0 } });
  let broken = 0;
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), plan, async (s, p) => {
      const { accepted, final } = await runScenario(redis, strategy, s, p, stats);
      const monotonic = final.fences.every((f, i) => i === 0 || f >= (final.fences[i - 1] ?? 0));
      const ok = final.count === accepted && final.fences.length === accepted && monotonic;
      if (!ok) broken++;
      return strategy !== "claim+fenced write" || ok;
    }),
    { numRuns, seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
  );
  return { broken, requests: stats.requests };
}

describe("fenced read-modify-write under random delays and expiries", () => {
  it("accepts no stale write and loses no increment over 10,000+ operations", async () => {
    // On failure fast-check prints the seed and path; replay with FC_SEED=<seed>.
    const { broken, requests } = await violations("claim+fenced write", 300);
    console.log(`fenced property: ${requests} operations, ${broken} violations`);
    expect(broken).toBe(0);
    expect(requests).toBeGreaterThanOrEqual(10_000);
  }, 180_000);

  it.each<Strategy>(["unfenced write", "fenced write only"])("negative control: %s loses updates", async (strategy) => {
    const { broken, requests } = await violations(strategy, 100);
    console.log(`negative control (${strategy}): ${requests} operations, ${broken} of 100 runs violated`);
    expect(broken).toBeGreaterThan(0);
  }, 180_000);
});
