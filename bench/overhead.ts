// npm run bench:overhead: where an uncontended fencelock cycle spends its time next to the raw
// floor's and @upstash/lock's, on one local server. Each round runs one cycle of every variant in a
// new random order, so a slow spell of the machine lands on all alike, and the p50s compare:
// - fencelock: locks.acquire(name, { waitMs }) + lease.release();
// - its scripts alone: the same two EVALSHA requests through the same client, nothing around them;
// - raw floor: SET NX PX + compare-and-delete by EVALSHA, what issue 26's uncontended target is judged against;
// - @upstash/lock: new Lock().acquire() + release().
// Every cycle runs in an AsyncLocalStorage scope, as npm run bench's clients do (it counts their
// requests so): with async hooks on, each promise a library makes costs more.
// Client time is each call's time less the time of the request inside it (timed where the
// library hands it to @upstash/redis), so the network and the server cancel out. Redis time is
// what Redis spends executing each variant's commands (INFO commandstats), from an untimed run
// of each variant alone afterwards. Last, fencelock's own code alone: cycles against a client that
// answers at once, which tells its share of the client time from the machine's.
import { AsyncLocalStorage } from "node:async_hooks";
import { Lock } from "@upstash/lock";
import { Redis } from "@upstash/redis";
import { createLocks, type RedisClient } from "../src/index.ts";
import { lockKeys } from "../test/support/lock-keys.ts";
import { scriptSha1 } from "../src/redis/run-script.ts";
import * as scripts from "../src/redis/scripts.gen.ts";
import { RedisStats } from "./harness/commandstats.ts";
import { installFetchCounter } from "./harness/requests.ts";
import { startServerProcess } from "./harness/server.ts";
import { quantile, shuffled } from "./harness/stats.ts";
import { now } from "./harness/timing.ts";

// BENCH_QUICK=1 runs a few rounds: a check that the script works (a test runs it), not numbers.
const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = quick ? 10 : Number(process.env.ROUNDS ?? 2_000);
const WARM_ROUNDS = quick ? 2 : 300;
/** Cycles per variant in the untimed run that Redis time comes from. */
const REDIS_CYCLES = quick ? 10 : 1_000;

/** The client's calls, each timed from hand-over to reply; `last` is the latest request's ms. */
function timedClient(redis: Redis) {
  const timed = { last: 0 };
  const time = async <T>(call: () => Promise<T>) => {
    const start = now();
    const reply = await call();
    timed.last = now() - start;
    return reply;
  };
  const client: RedisClient = {
    evalsha: (sha, keys, args) => time(() => redis.evalsha(sha, keys, args)),
    eval: (text, keys, args) => time(() => redis.eval(text, keys, args)),
  };
  // @upstash/lock calls only these two; the raw floor, set and evalsha.
  const forLock = {
    set: (...args: Parameters<Redis["set"]>) => time(() => redis.set(...args)),
    eval: (...args: Parameters<Redis["eval"]>) => time(() => redis.eval(...args)),
  } as unknown as Redis;
  return { timed, client, forLock };
}

interface Sample {
  cycle: number;
  clientAcquire: number;
  clientRelease: number;
}

/** Acquires, and returns how to release. */
type Variant = () => Promise<() => Promise<unknown>>;

/** As bench/adapters/raw-floor.ts releases. */
const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`;

async function main(): Promise<void> {
  const server = await startServerProcess();
  try {
    const redis = new Redis({ url: server.url, token: server.token, enableTelemetry: false });
    const timedRedis = timedClient(redis);
    const variants = await makeVariants(redis, timedRedis);
    const samples = await timeRounds(variants, timedRedis.timed);
    report(samples, await redisMicrosPerCycle(server.redisUrl, variants));
    console.log(`\nfencelock's own code, against a client that answers at once: ${(await ownCodeMicros()).toFixed(1)} µs a cycle`);
  } finally {
    await server.close();
  }
}

async function makeVariants(redis: Redis, { client, forLock }: ReturnType<typeof timedClient>): Promise<Record<string, Variant>> {
  const locks = createLocks({ redis: client, prefix: "overhead" });
  const keys = Object.values(lockKeys("overhead", "bare"));
  const [acquireSha1, releaseSha1] = await Promise.all([scriptSha1(scripts.acquire), scriptSha1(scripts.release)]);
  // Loads both scripts, which the bare variant sends by SHA-1 alone.
  await (await locks.acquire("warm")).release();
  const compareAndDelete = await redis.scriptLoad(COMPARE_AND_DELETE);
  let ticket = 0;
  return {
    fencelock: async () => {
      const lease = await locks.acquire("timed", { waitMs: 60_000 });
      return () => lease.release();
    },
    "its scripts alone": async () => {
      const id = (ticket++).toString(16).padStart(32, "0");
      const [, fence] = (await client.evalsha(acquireSha1, keys, [id, id, "10000", "70000", "2000"])) as number[];
      // Its own request id, as a lease has: the ticket's mark would make the release look like a retry.
      const releaseId = (ticket++).toString(16).padStart(32, "0");
      const releaseKeys = Object.values(lockKeys("overhead", "bare", fence));
      return () => client.evalsha(releaseSha1, releaseKeys, [id, String(fence), releaseId, "60000"]);
    },
    "raw floor": async () => {
      const token = crypto.randomUUID();
      await forLock.set("overhead:raw", token, { nx: true, px: 10_000 });
      return () => client.evalsha(compareAndDelete, ["overhead:raw"], [token]);
    },
    "@upstash/lock": async () => {
      const lock = new Lock({ id: "overhead:upstash", redis: forLock });
      await lock.acquire();
      return () => lock.release();
    },
  };
}

/** The timed rounds: one cycle of every variant per round, in a new random order, each in an async scope. */
async function timeRounds(variants: Record<string, Variant>, timed: { last: number }): Promise<Record<string, Sample[]>> {
  const scope = new AsyncLocalStorage<string>();
  const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = -WARM_ROUNDS; round < ROUNDS; round++) {
    for (const name of shuffled(Object.keys(variants))) {
      const acquire = variants[name];
      if (!acquire) continue;
      const sample = await scope.run(name, async () => {
        const start = now();
        const release = await acquire();
        const acquired = now();
        const acquireRequest = timed.last;
        await release();
        const end = now();
        return { cycle: end - start, clientAcquire: acquired - start - acquireRequest, clientRelease: end - acquired - timed.last };
      });
      if (round >= 0) samples[name]?.push(sample);
    }
  }
  return samples;
}

/** µs Redis spends executing one cycle of each variant, over an untimed run of each alone. */
async function redisMicrosPerCycle(
  redisUrl: string,
  variants: Record<string, Variant>,
): Promise<Record<string, number>> {
  const stats = new RedisStats(redisUrl);
  const restoreFetch = installFetchCounter(); // names the commands each variant sends
  try {
    const micros: Record<string, number> = {};
    for (const [name, acquire] of Object.entries(variants)) {
      const { micros: total } = await stats.timeSent(async () => {
        for (let n = 0; n < REDIS_CYCLES; n++) await (await acquire())();
      });
      micros[name] = total / REDIS_CYCLES;
    }
    return micros;
  } finally {
    restoreFetch();
    await stats.close();
  }
}

/** µs a fencelock cycle takes against a client that answers at once (push waits on, as with @upstash/redis). */
async function ownCodeMicros(): Promise<number> {
  let fence = 0;
  const instant: RedisClient = {
    // acquire.lua's grant for 4 keys; release.lua's "released" for 5.
    evalsha: async (_sha, keys) => (keys.length === 4 ? [1, ++fence, 1, 10_000] : [1, 0]),
    eval: () => Promise.reject(new Error("the instant client knows every script")),
    subscribe: () => {
      throw new Error("an uncontended cycle never waits");
    },
  };
  const locks = createLocks({ redis: instant, prefix: "overhead" });
  const scope = new AsyncLocalStorage<number>();
  const cycles = async (count: number) => {
    for (let n = 0; n < count; n++) await scope.run(n, async () => (await locks.acquire("own", { waitMs: 60_000 })).release());
  };
  await cycles(quick ? 10 : 20_000);
  const start = now();
  const count = quick ? 10 : 200_000;
  await cycles(count);
  return ((now() - start) * 1000) / count;
}

function report(samples: Record<string, Sample[]>, redisMicros: Record<string, number>): void {
  const p50 = (values: number[]) => quantile([...values].sort((a, b) => a - b), 0.5);
  const fencelock = p50((samples.fencelock ?? []).map((s) => s.cycle));
  const floor = p50((samples["raw floor"] ?? []).map((s) => s.cycle));
  console.log(`${ROUNDS} rounds, one cycle of each variant per round in random order, each in an AsyncLocalStorage scope; p50s\n`);
  console.log("| variant | cycle ms | its ÷ fencelock's cycle | floor's ÷ its cycle | client µs per acquire | client µs per release | Redis µs per cycle |\n|---|---:|---:|---:|---:|---:|---:|");
  for (const [name, rows] of Object.entries(samples)) {
    const cycle = p50(rows.map((s) => s.cycle));
    const acquire = p50(rows.map((s) => s.clientAcquire)) * 1000;
    const release = p50(rows.map((s) => s.clientRelease)) * 1000;
    const redis = redisMicros[name] ?? Number.NaN;
    console.log(`| ${name} | ${cycle.toFixed(3)} | ${(cycle / fencelock).toFixed(3)} | ${(floor / cycle).toFixed(3)} | ${acquire.toFixed(0)} | ${release.toFixed(0)} | ${redis.toFixed(0)} |`);
  }
}

await main();
