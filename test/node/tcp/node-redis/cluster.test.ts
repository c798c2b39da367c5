// fencelock/node-redis on a real 3-master Redis Cluster: the lock set, the fenced store and push
// wake-ups on names served by every master, and the adapter's SSUBSCRIBE streams.
import { createCluster, RESP_TYPES } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { createFencedStore, createLocks, StaleFenceError, type RedisClient } from "../../../../src/index.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { startRedisCluster, type RedisCluster } from "../../../support/redis-cluster.ts";
import { until } from "../../../support/until.ts";
import { expectPushHandover } from "./observe.ts";

const SLOTS = 16384;

let servers: RedisCluster;
/** RESP3 (node-redis' default), with no type mapping. */
let cluster: ReturnType<typeof createCluster>;
/** Two names per master, in master order. */
let names: string[];

beforeAll(async () => {
  servers = await startRedisCluster();
  cluster = await connectedCluster();
  names = await namesOnEveryMaster(2);
});

const clusters: { close(): Promise<unknown> }[] = [];
/** A cluster client on the test cluster, closed after the file's tests. */
async function connectedCluster(options: Omit<Parameters<typeof createCluster>[0], "rootNodes"> = {}) {
  const made = createCluster({ ...options, rootNodes: servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
  made.on("error", () => {});
  await made.connect();
  clusters.push(made);
  return made;
}

afterAll(async () => {
  await Promise.all(clusters.map((made) => made.close()));
  await servers?.stop();
});

/** The index of the master serving `slot`, as startRedisCluster splits the slots. */
const masterOf = (slot: number) => servers.masters.findLastIndex((_, i) => Math.floor((SLOTS * i) / servers.masters.length) <= slot);

/** `perMaster` names for each master, whose lock keys (`prefix:{name}:…`) hash to that master's slots. */
async function namesOnEveryMaster(perMaster: number): Promise<string[]> {
  const byMaster: string[][] = servers.masters.map(() => []);
  for (let i = 0; byMaster.some((list) => list.length < perMaster); i++) {
    const name = `job:${i}`;
    const slot = Number(await servers.masters[0]!.admin.call("CLUSTER", "KEYSLOT", name));
    const list = byMaster[masterOf(slot)]!;
    if (list.length < perMaster) list.push(name);
  }
  return byMaster.flat();
}

let prefixes = 0;
const uniquePrefix = (label: string) => `nr-cluster-${label}-${++prefixes}`;

describe("fromNodeRedis on a Redis Cluster", () => {
  it("acquires, heartbeats, inspects and releases on every master, fences rising", async () => {
    const locks = createLocks({ redis: fromNodeRedis(cluster), prefix: uniquePrefix("cycle") });
    for (const name of names) {
      const first = await locks.acquire(name);
      expect(await locks.tryAcquire(name)).toBeNull();
      await first.heartbeat();
      expect(await locks.inspect(name)).toMatchObject({ held: true, fence: first.fence, holds: 1 });
      expect(await first.release()).toBe("released");
      const second = await locks.withLock(name, (lease) => lease.fence);
      expect(second).toBeGreaterThan(first.fence);
    }
  });

  it("fenced store: accepts a fresh fence and refuses a stale one on every master", async () => {
    const redis = fromNodeRedis(cluster);
    const prefix = uniquePrefix("store");
    const [locks, store] = [createLocks({ redis, prefix }), createFencedStore({ redis, prefix })];
    for (const name of names) {
      const old = await locks.withLock(name, (lease) => lease.fence);
      const fresh = await locks.acquire(name);
      await store.write(name, { by: fresh.fence }, fresh.fence);
      await expect(store.write(name, { by: old }, old)).rejects.toBeInstanceOf(StaleFenceError);
      expect(await store.read(name)).toEqual({ value: { by: fresh.fence }, fence: fresh.fence });
      await fresh.release();
    }
  });

  it("reads replies over RESP2 with integers as text and strings as Buffers", async () => {
    const mapped = await connectedCluster({
      RESP: 2,
      commandOptions: { typeMapping: { [RESP_TYPES.NUMBER]: String, [RESP_TYPES.BLOB_STRING]: Buffer } },
    });
    const redis = fromNodeRedis(mapped);
    const prefix = uniquePrefix("resp2");
    const [locks, store] = [createLocks({ redis, prefix }), createFencedStore({ redis, prefix })];
    for (const name of names) {
      const fence = await locks.withLock(name, async (lease) => (await store.write(name, "done", lease.fence), lease.fence));
      expect(await store.read(name)).toEqual({ value: "done", fence });
    }
  });

  it("hands waiters on every master the lock on release, by push (sharded pub/sub by default)", async () => {
    const redis = fromNodeRedis(cluster);
    expect(redis.ssubscribe).toBeTypeOf("function");
    await expectPushHandover(redis, uniquePrefix("push"), names, "sharded");
  });

  it("hands waiters the lock by push over classic pub/sub, with pubsub: \"classic\"", async () => {
    const redis = fromNodeRedis(cluster, { pubsub: "classic" });
    expect(redis.ssubscribe).toBeUndefined();
    await expectPushHandover(redis, uniquePrefix("push-classic"), names, "classic");
  });
});

describe("fromNodeRedis(cluster).ssubscribe", () => {
  /** Opens a stream on `channel` and resolves once it is confirmed, with the messages it hears. */
  async function stream(redis: RedisClient, channel: string) {
    const messages: unknown[] = [];
    let confirmed = false;
    const subscriber: WakeSubscriber = redis.ssubscribe!(channel);
    subscriber.on("subscribe", () => (confirmed = true));
    subscriber.on("message", (event) => messages.push((event as { message: unknown }).message));
    await until(async () => confirmed, 5_000);
    return { subscriber, messages };
  }

  it("hears an SPUBLISH to its shard channel, on every master", async () => {
    const redis = fromNodeRedis(cluster);
    const streams = await Promise.all(names.map((name) => stream(redis, `fencelock.test:{${name}}`)));
    await Promise.all(names.map((name) => cluster.sPublish(`fencelock.test:{${name}}`, `to ${name}`)));
    await until(async () => streams.every(({ messages }) => messages.length === 1), 5_000);
    expect(streams.map(({ messages }) => messages[0])).toEqual(names.map((name) => `to ${name}`));
    await Promise.all(streams.map(({ subscriber }) => subscriber.unsubscribe()));
  });
});

describe("fromNodeRedis(cluster) streams", () => {
  it("are told when a node's pub/sub connection drops, sharded and classic, and leave no listener behind", async () => {
    const own = await connectedCluster();
    const redis = fromNodeRedis(own);
    const listeners = () => ["node-error", "node-reconnecting", "sharded-channel-moved-error"].map((event) => own.listenerCount(event));
    const [confirmed, errors] = [{ n: 0 }, new Set<WakeSubscriber>()];
    const open = (subscribe: (channel: string) => WakeSubscriber, channel: string) => {
      const stream = subscribe(channel);
      stream.on("subscribe", () => confirmed.n++);
      stream.on("error", () => errors.add(stream));
      return stream;
    };
    const streams = [...names.map((name) => open(redis.ssubscribe!, `fencelock.drop:{${name}}`)), open(redis.subscribe!, "fencelock.drop")];
    await until(async () => confirmed.n === streams.length, 5_000);
    expect(listeners()).toEqual([2, 2, 2]);
    await Promise.all(servers.masters.map(({ admin }) => admin.call("CLIENT", "KILL", "TYPE", "pubsub")));
    await until(async () => errors.size === streams.length, 5_000);
    await Promise.all(streams.map((stream) => stream.unsubscribe()));
    // The last stream gone, the adapter leaves no listener on the user's cluster.
    expect(listeners()).toEqual([0, 0, 0]);
  });
});

// Last in the file: it leaves one slot on another master.
describe("fromNodeRedis(cluster).ssubscribe when a slot moves", () => {
  it("hears its channel on the slot's new master: node-redis subscribes there again by itself", async () => {
    const channel = "fencelock.test:{moving}";
    const slot = Number(await servers.masters[0]!.admin.call("CLUSTER", "KEYSLOT", channel));
    const from = servers.masters[masterOf(slot)]!;
    const to = servers.masters.find((master) => master !== from)!;
    const messages: unknown[] = [];
    let confirmed = false;
    const subscriber = fromNodeRedis(cluster).ssubscribe!(channel);
    subscriber.on("subscribe", () => (confirmed = true));
    subscriber.on("message", (event) => messages.push((event as { message: unknown }).message));
    await until(async () => confirmed, 5_000);
    // The slot holds no key: it moves without MIGRATE.
    await to.admin.call("CLUSTER", "SETSLOT", slot, "IMPORTING", from.id);
    await from.admin.call("CLUSTER", "SETSLOT", slot, "MIGRATING", to.id);
    for (const master of servers.masters) await master.admin.call("CLUSTER", "SETSLOT", slot, "NODE", to.id);
    // Published on the new master until heard: subscribing there again takes a moment.
    await until(async () => (await to.admin.call("SPUBLISH", channel, "moved"), messages.includes("moved")), 5_000);
    await subscriber.unsubscribe();
  });
});
