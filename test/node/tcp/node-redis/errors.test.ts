// fencelock/node-redis's errors: what is not a node-redis client, bad options, a client not
// connected, and Redis going away mid-use (calls fail within timeoutMs, and work again once it is back).
import { Redis } from "ioredis";
import { createClient, createCluster, createSentinel } from "redis";
import { createClient as createClientV4 } from "redis4";
import { afterEach, describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError, LockUnavailableError } from "../../../../src/index.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { startRedisCluster } from "../../../support/redis-cluster.ts";
import { until } from "../../../support/until.ts";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(port?: number): Promise<RedisServer> {
  const started = await startRedisServer(port === undefined ? {} : { port });
  cleanups.push(() => started.stop());
  return started;
}

function client(url: string) {
  const made = createClient({ url });
  made.on("error", () => {});
  cleanups.push(() => made.destroy());
  return made;
}

/** How long `work` took to reject, and with what. */
async function rejection(work: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await work.then(() => new Error("resolved"), (caught: unknown) => caught);
  return { error, ms: performance.now() - started };
}

describe("fromNodeRedis refuses", () => {
  it("what is not a node-redis client, saying what to do instead", () => {
    const ioredis = new Redis({ lazyConnect: true });
    expect(() => fromNodeRedis(ioredis as never)).toThrow(LockConfigError);
    expect(() => fromNodeRedis(ioredis as never)).toThrow(/ioredis client: use fromIoredis from fencelock\/ioredis/);
    const adapted = fromNodeRedis(createClient());
    expect(() => fromNodeRedis(adapted as never)).toThrow(/one fromNodeRedis\(\) already made: pass it to createLocks as it is/);
    for (const wrong of [undefined, null, {}, { evalSha: () => undefined }, "redis://localhost"]) {
      expect(() => fromNodeRedis(wrong as never)).toThrow(/expected a client from createClient\(\) or createCluster\(\)/);
    }
  });

  // npm refuses redis@4 against the peer range, but yarn, pnpm or --legacy-peer-deps let it through.
  it("a node-redis 4 client, plain or in legacyMode, naming the version to upgrade to", () => {
    for (const old of [createClientV4(), createClientV4({ legacyMode: true })]) {
      expect(() => fromNodeRedis(old as never)).toThrow(/node-redis 4 client .*: upgrade the redis package to 6\.0\.1 or later/);
      expect(() => fromIoredis(old as never)).toThrow(/node-redis 4 client .*: upgrade the redis package to 6\.0\.1 or later and use fromNodeRedis/);
    }
  });

  it("options it does not know, and sharded pub/sub for a single server", () => {
    const single = createClient();
    expect(() => fromNodeRedis(single, { pubSub: "classic" } as never)).toThrow('unknown option "pubSub"');
    expect(() => fromNodeRedis(single, { pubsub: "fast" } as never)).toThrow('pubsub: expected "sharded" or "classic"');
    expect(() => fromNodeRedis(single, "classic" as never)).toThrow("expected an options object");
    expect(() => fromNodeRedis(single, { pubsub: "sharded" })).toThrow('pubsub: "sharded" is for a Cluster client; a single server has classic pub/sub only');
    expect(fromNodeRedis(single, { pubsub: "classic" }).ssubscribe).toBeUndefined();
  });
});

describe("fromNodeRedis with node-redis' own Sentinel client", () => {
  // Its scripts would run, but its pub/sub needs a node chosen first: every push wait would fail.
  it("is refused, pointing to fromIoredis for Sentinel", () => {
    const sentinel = createSentinel({ name: "mymaster", sentinelRootNodes: [{ host: "127.0.0.1", port: 1 }] });
    expect(() => fromNodeRedis(sentinel as never)).toThrow(/Sentinel client \(createSentinel\) is not supported: for Sentinel, use fromIoredis/);
  });
});

describe("fromNodeRedis with a client the app subscribed with (RESP2)", () => {
  // It never recovers: a LockUnavailableError would invite retries, and its hint points at the network.
  it("fails each call with LockConfigError, saying to pass another", async () => {
    const redis = await server();
    const subscribed = createClient({ url: redis.url, RESP: 2 });
    cleanups.push(() => subscribed.destroy());
    await subscribed.connect();
    await subscribed.subscribe("app-events", () => undefined);
    const locks = createLocks({ redis: fromNodeRedis(subscribed), prefix: "nr-subscribed" });
    await expect(locks.tryAcquire("job")).rejects.toThrow(/Invalid node-redis client: it is in subscriber mode .*pass a client that is not subscribed/);
  });
});

describe("fromNodeRedis with a client that is not connected", () => {
  it("fails each call at once, saying to connect it first (and so once it was closed)", async () => {
    const redis = await server();
    const notYet = client(redis.url);
    const locks = createLocks({ redis: fromNodeRedis(notYet), prefix: "nr-errors" });
    const { error, ms } = await rejection(locks.acquire("gate"));
    // The adapter's own error, not one that says to check the URL and network.
    expect(error).toBeInstanceOf(LockConfigError);
    expect(String(error)).toMatch(/not connected \(call await client\.connect\(\) before the first lock call/);
    expect(ms).toBeLessThan(1_000);
    await notYet.connect();
    await (await locks.acquire("gate")).release();
    await notYet.close();
    await expect(locks.tryAcquire("gate")).rejects.toThrow(/not connected/);
  });
});

describe("fromNodeRedis when Redis goes away", () => {
  it("fails calls with LockUnavailableError within timeoutMs, a waiter's too, and works again once Redis is back", async () => {
    let redis = await server();
    const connected = await client(redis.url).connect();
    const adapter = fromNodeRedis(connected);
    const [locks, store] = [createLocks({ redis: adapter, prefix: "nr-down", timeoutMs: 500 }), createFencedStore({ redis: adapter, prefix: "nr-down", timeoutMs: 500 })];
    const held = await locks.acquire("gate");
    // A waiter on its push stream when Redis stops.
    const waiter = locks.acquire("gate", { waitMs: 20_000 });
    await until(async () => (await locks.inspect("gate")).waiters === 1, 5_000);
    await redis.stop();
    const waiting = rejection(waiter);
    const calls = [() => locks.tryAcquire("other"), () => held.heartbeat(), () => store.write("doc", 1, held.fence), () => locks.inspect("gate")];
    for (const call of calls) {
      const { error, ms } = await rejection(call());
      expect(error).toBeInstanceOf(LockUnavailableError);
      // 500 ms, and time to spare on a busy machine.
      expect(ms).toBeLessThan(3_000);
    }
    const { error, ms } = await waiting;
    expect(error).toBeInstanceOf(LockUnavailableError);
    // Its stream's drop wakes it, and its next attempt fails as the calls above did.
    expect(ms).toBeLessThan(3_000);
    redis = await server(redis.port);
    // node-redis reconnects by itself, within 2 s of backoff.
    await until(async () => locks.tryAcquire("gate").then((lease) => lease !== null, () => false), 10_000);
  });
});

// Redis 6 has no SSUBSCRIBE; a Redis 7 cluster with the command renamed away answers as Redis 6 would.
describe("fromNodeRedis on a cluster without SSUBSCRIBE", () => {
  it("fails the stream with a message that says to pass pubsub: \"classic\"", async () => {
    const servers = await startRedisCluster({ args: ["--rename-command", "SSUBSCRIBE", ""] });
    cleanups.push(() => servers.stop());
    const cluster = createCluster({ rootNodes: servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    cluster.on("error", () => {});
    await cluster.connect();
    cleanups.push(() => cluster.destroy());
    const stream = fromNodeRedis(cluster).ssubscribe!("fencelock.x:{a}");
    const failure = new Promise((resolve) => stream.on("error", resolve));
    expect(String(await failure)).toMatch(/unknown command.*sharded pub\/sub needs Redis 7 or later; pass fromNodeRedis\(cluster, \{ pubsub: "classic" \}\)/);
    await stream.unsubscribe();
  });
});
