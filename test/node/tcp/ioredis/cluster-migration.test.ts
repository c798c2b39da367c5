// A slot migrates (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while workers take and
// give back locks in it through fromIoredis(new Cluster(...)): ioredis follows ASK, TRYAGAIN and
// MOVED, so no worker sees an error, no two hold a lock at once, and each lock's fences rise. And
// a shard channel's stream, whose slot moves, reports it; a new one is made at the new master.
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { createLocks } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { slotOf } from "../../../../src/tcp/slot.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { startRedisCluster, type ClusterNode, type RedisCluster } from "../../../support/redis-cluster.ts";
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

/** `count` lock names whose keys (`prefix:{name}:…`) are all in `slot`. */
function namesInSlot(prefix: string, slot: number, count: number): string[] {
  const names: string[] = [];
  for (let i = 0; names.length < count; i++) if (slotOf(`${prefix}:{m${i}}`) === slot) names.push(`m${i}`);
  return names;
}

/** Moves `slot` from `source` to `target` as redis-cli --cluster reshard does, key batch by key batch. */
async function migrate(slot: number, source: ClusterNode, target: ClusterNode, all: readonly ClusterNode[]): Promise<number> {
  await target.admin.call("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id);
  await source.admin.call("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id);
  await sleep(100); // meanwhile workers are sent on with ASK, or TRYAGAIN (below)
  let moved = 0;
  for (;;) {
    const keys = (await source.admin.call("CLUSTER", "GETKEYSINSLOT", slot, 100)) as string[];
    if (keys.length === 0) break;
    await source.admin.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5_000, "KEYS", ...keys);
    moved += keys.length;
  }
  for (const node of [target, source, ...all]) await node.admin.call("CLUSTER", "SETSLOT", slot, "NODE", target.id);
  return moved;
}

describe("a slot migration under load", () => {
  it("is invisible to lock users: no errors, one holder at a time, fences rising per lock", async () => {
    const prefix = uniquePrefix("migrate");
    const [source, target] = [cluster.masters[0]!, cluster.masters[1]!];
    const slot = 100; // in the first master's third of the slots
    const names = namesInSlot(prefix, slot, 3);
    const { client: redis, seen } = await observed(fromIoredis(client));
    const errors: unknown[] = [];
    const fences = new Map<string, number[]>(names.map((name) => [name, []]));
    const holding = new Set<string>();
    let overlaps = 0;
    let running = true;
    const worker = async (worker: number) => {
      const locks = createLocks({ redis, prefix, leaseMs: 10_000 });
      for (let i = worker; running; i++) {
        const name = names[i % names.length]!;
        try {
          await locks.withLock(name, async (lease) => {
            if (holding.has(name)) overlaps++;
            holding.add(name);
            fences.get(name)!.push(lease.fence);
            await sleep(2);
            holding.delete(name);
          }, { waitMs: 10_000 });
        } catch (error) {
          errors.push(error);
        }
      }
    };
    const workers = [0, 1, 2, 3, 4, 5].map(worker);
    await sleep(300);
    const cycles = () => [...fences.values()].flat().length;
    const before = cycles();
    const moved = await migrate(slot, source, target, cluster.masters);
    const after = cycles();
    await sleep(700);
    running = false;
    await Promise.all(workers);

    expect(errors).toEqual([]);
    expect(overlaps).toBe(0);
    for (const [name, list] of fences) {
      expect(list.every((fence, i) => i === 0 || fence > list[i - 1]!), `fences of ${name} rise`).toBe(true);
    }
    // The load ran before and after the move (during it, most calls wait out TRYAGAIN: a lock's
    // keys that do not exist, as an empty queue, count as missing), and the slot's keys moved.
    expect(moved).toBeGreaterThan(0);
    expect(Math.min(before, cycles() - after)).toBeGreaterThan(0);
    expect(await target.admin.call("CLUSTER", "COUNTKEYSINSLOT", slot)).toBeGreaterThan(0);
    expect(await source.admin.call("CLUSTER", "COUNTKEYSINSLOT", slot)).toBe(0);
    // Contended locks handed over by SPUBLISH, before the move and after (on the target).
    expect(seen.messages).toBeGreaterThan(0);
  });
});

/** Moves an empty slot at once, as the last step of a migration does. */
async function reassign(slot: number, target: ClusterNode): Promise<void> {
  for (const node of cluster.masters) await node.admin.call("CLUSTER", "SETSLOT", slot, "NODE", target.id);
}

/** A confirmed stream from `ssubscribe`, its messages and errors collected. */
function confirmedStream(ssubscribe: (channel: string) => WakeSubscriber, channel: string) {
  const events = { messages: [] as unknown[], errors: [] as unknown[] };
  const stream = ssubscribe(channel);
  stream.on("message", (event) => events.messages.push(event));
  stream.on("error", (error) => events.errors.push(error));
  const confirmed = new Promise<void>((resolve) => stream.on("subscribe", () => resolve()));
  return { stream, events, confirmed };
}

describe("a shard channel whose slot moves", () => {
  it("has its stream report the move (the node's SUNSUBSCRIBE), so its lock set opens another", async () => {
    const channel = `fencelock.test:{${uniquePrefix("moving")}}`;
    const { ssubscribe } = fromIoredis(client);
    const { stream, events, confirmed } = confirmedStream(ssubscribe!, channel);
    await confirmed;
    const target = cluster.masters.find(({ port }) => client.slots[slotOf(channel)]?.[0] !== `127.0.0.1:${port}`)!;
    await reassign(slotOf(channel), target);
    await vi.waitFor(() => expect(events.errors).toHaveLength(1), { timeout: 5_000 });
    expect(String(events.errors[0])).toMatch(/subscriber connection dropped/);
    await stream.unsubscribe();
  });

  it("is subscribed at the new master even when the client's slot map is stale (MOVED to SSUBSCRIBE)", async () => {
    const channel = `fencelock.test:{${uniquePrefix("stale")}}`;
    const slot = slotOf(channel);
    const target = cluster.masters.find(({ port }) => client.slots[slot]?.[0] !== `127.0.0.1:${port}`)!;
    await reassign(slot, target);
    expect(client.slots[slot]?.[0]).not.toBe(`127.0.0.1:${target.port}`); // the client has not noticed
    const { ssubscribe } = fromIoredis(client);
    const { stream, events, confirmed } = confirmedStream(ssubscribe!, channel);
    await confirmed;
    expect(await target.admin.call("PUBSUB", "SHARDNUMSUB", channel)).toEqual([channel, 1]);
    await target.admin.spublish(channel, "here");
    await vi.waitFor(() => expect(events.messages).toEqual([{ channel, message: "here" }]));
    expect(events.errors).toEqual([]);
    await stream.unsubscribe();
  });
});
