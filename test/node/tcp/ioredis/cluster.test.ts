// fromIoredis on a real 3-master Redis Cluster: the lock set, the fenced store and push wake-ups
// (sharded and classic) on names spread over every master.
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { createFencedStore, createLocks, StaleFenceError } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { slotOf } from "../../../../src/tcp/slot.ts";
import { startRedisCluster, type RedisCluster } from "../../../support/redis-cluster.ts";
import { uniquePrefix } from "../../../support/upstash.ts";
import { observed } from "./observe.ts";

let cluster: RedisCluster;
let client: Cluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.startNodes);
  await client.ping();
});
afterAll(async () => {
  await client?.quit();
  await cluster?.stop();
});

/** The master that holds `key`'s slot, as "host:port". */
const masterOf = (key: string) => String(client.slots[slotOf(key)]?.[0]);
const masters = () => cluster.masters.map(({ port }) => `127.0.0.1:${port}`);

/** `perMaster` lock names on each master, for this prefix. */
function namesOnEveryMaster(prefix: string, perMaster = 2): string[] {
  const names: string[] = [];
  for (const master of masters()) {
    for (let i = 0; names.filter((name) => masterOf(`${prefix}:{${name}}`) === master).length < perMaster; i++) {
      if (masterOf(`${prefix}:{n${i}}`) === master && !names.includes(`n${i}`)) names.push(`n${i}`);
    }
  }
  return names;
}

const pubsubConnections = async (name: string) => {
  const lists = await Promise.all(cluster.masters.map(({ admin }) => admin.client("LIST", "TYPE", "PUBSUB")));
  return lists.join("\n").split("\n").filter((line) => line.includes(` name=${name} `)).length;
};

describe("slotOf", () => {
  it("agrees with CLUSTER KEYSLOT, hash tags and multibyte text included", async () => {
    const keys = ["", "{}", "{}x", "a{}{b}", "{a}b", "a{b", "a}b{c}", "{{x}}", "ü{ñ}", "t:{order%7B42}:lock", "😀", "x".repeat(300)];
    for (let i = 0; i < 200; i++) keys.push(String.fromCodePoint(...Array.from({ length: 1 + (i % 9) }, (_, j) => 32 + ((i * 7919 + j * 104729) % 2000))));
    const admin = cluster.masters[0]!.admin;
    const slots = await Promise.all(keys.map((key) => admin.call("CLUSTER", "KEYSLOT", key)));
    expect(keys.map(slotOf)).toEqual(slots.map(Number));
  });
});

describe("the lock set and the fenced store through fromIoredis(new Cluster(...))", () => {
  it("take, extend and give back locks on every master, each lease with a higher fence", async () => {
    const prefix = uniquePrefix("cluster");
    const names = namesOnEveryMaster(prefix);
    const locks = createLocks({ redis: fromIoredis(client), prefix, leaseMs: 5_000 });
    const first = await Promise.all(names.map((name) => locks.acquire(name)));
    // Held on every master, so every master ran the scripts.
    const held = await Promise.all(cluster.masters.map(({ admin }) => admin.keys(`${prefix}:*:lock`)));
    expect(held.map((keys) => keys.length)).toEqual([2, 2, 2]);
    expect(await Promise.all(names.map((name) => locks.tryAcquire(name)))).toEqual(names.map(() => null));
    await Promise.all(first.map((lease) => lease.heartbeat()));
    expect(await locks.inspect(names[0]!)).toMatchObject({ held: true, fence: first[0]!.fence });
    await Promise.all(first.map((lease) => lease.release()));
    const second = await Promise.all(names.map((name) => locks.withLock(name, (lease) => lease.fence)));
    second.forEach((fence, i) => expect(fence).toBeGreaterThan(first[i]!.fence));
  });

  it("has the fenced store take fresh fences and refuse stale ones on every master", async () => {
    const prefix = uniquePrefix("cluster-store");
    const redis = fromIoredis(client, { pubsub: "classic" });
    const [locks, store] = [createLocks({ redis, prefix }), createFencedStore({ redis, prefix })];
    for (const name of namesOnEveryMaster(prefix, 1)) {
      const old = await locks.withLock(name, (lease) => lease.fence);
      const fresh = await locks.acquire(name);
      await store.write(name, { by: fresh.fence }, fresh.fence);
      await expect(store.claim(name, old)).rejects.toBeInstanceOf(StaleFenceError);
      expect(await store.read(name)).toEqual({ value: { by: fresh.fence }, fence: fresh.fence });
      await fresh.release();
    }
  });
});

describe("push wake-ups on a Cluster", () => {
  it("ssubscribe: a stream in any slot hears an SPUBLISH to its channel, on a connection to that slot's master (the client connected on first use)", async () => {
    const prefix = uniquePrefix("shard");
    const named = new Cluster(cluster.startNodes, { lazyConnect: true, redisOptions: { connectionName: prefix } });
    const { ssubscribe } = fromIoredis(named);
    const channels = namesOnEveryMaster(prefix, 1).map((name) => `fencelock.test:${prefix}:{${name}}:lock`);
    const heard: unknown[] = [];
    const streams = await Promise.all(channels.map((channel) => new Promise<WakeSubscriber>((resolve, reject) => {
      const stream = ssubscribe!(channel);
      stream.on("subscribe", () => resolve(stream));
      stream.on("error", reject);
      stream.on("message", (event) => heard.push(event));
    })));
    for (const channel of channels) {
      const owner = cluster.masters.find(({ port }) => masterOf(channel) === `127.0.0.1:${port}`)!;
      expect(await owner.admin.call("PUBSUB", "SHARDNUMSUB", channel)).toEqual([channel, 1]);
      await client.spublish(channel, `to ${channel}`);
    }
    await vi.waitFor(() => expect(heard).toHaveLength(3));
    expect(heard).toEqual(expect.arrayContaining(channels.map((channel) => ({ channel, message: `to ${channel}` }))));
    expect(await pubsubConnections(prefix)).toBe(3);
    await Promise.all(streams.map((stream) => stream.unsubscribe()));
    // A closed connection leaves CLIENT LIST once each master has read the close, a moment later.
    await vi.waitFor(async () => expect(await pubsubConnections(prefix)).toBe(0), { timeout: 5_000 });
    await named.quit();
  });

  it.each(["sharded", "classic"] as const)("%s: a release hands each lock, on every master, to its waiter by a message", async (pubsub) => {
    const prefix = uniquePrefix(`cluster-push-${pubsub}`);
    const names = namesOnEveryMaster(prefix, 1);
    const holders = await Promise.all(names.map((name) => createLocks({ redis: fromIoredis(client), prefix }).acquire(name)));
    const { client: redis, seen } = await observed(fromIoredis(client, { pubsub }));
    const locks = createLocks({ redis, prefix });
    const waiting = names.map((name) => locks.acquire(name, { waitMs: 8_000 }));
    // Sharded: a stream per lock, on its slot's master; classic: one for the lock set.
    const streams = pubsub === "sharded" ? names.length : 1;
    await vi.waitFor(() => expect(seen).toMatchObject({ streams, confirmations: streams }), { timeout: 5_000 });
    const attempts = seen.acquires;
    await Promise.all(holders.map((holder) => holder.release()));
    const leases = await Promise.all(waiting);
    leases.forEach((lease, i) => expect(lease.fence).toBeGreaterThan(holders[i]!.fence));
    expect(seen).toMatchObject({ messages: 3, acquires: attempts });
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it("sharded, through a client with a keyPrefix: the handover still reaches its waiter by a message", async () => {
    const prefix = uniquePrefix("cluster-key-prefix");
    const prefixed = new Cluster(cluster.startNodes, { keyPrefix: "app:" });
    const [name] = namesOnEveryMaster(prefix, 1);
    const holder = await createLocks({ redis: fromIoredis(prefixed), prefix }).acquire(name!);
    const { client: redis, seen } = await observed(fromIoredis(prefixed));
    const waiting = createLocks({ redis, prefix }).acquire(name!, { waitMs: 8_000 });
    await vi.waitFor(() => expect(seen.confirmations).toBe(1), { timeout: 5_000 });
    const attempts = seen.acquires;
    await holder.release();
    await (await waiting).release();
    // release.lua names the channel from the key's "{" on, so the "app:" it saw does not matter.
    expect(seen).toMatchObject({ messages: 1, acquires: attempts });
    await prefixed.quit();
  });
});
