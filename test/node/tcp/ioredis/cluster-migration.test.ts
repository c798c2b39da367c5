// A slot migrates (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while workers take and
// give back locks in it through fromIoredis(new Cluster(...)): ioredis follows ASK, TRYAGAIN and
// MOVED, so no worker sees an error, no two hold a lock at once, and each lock's fences rise. And
// a shard channel's stream, whose slot moves, reports it; a new one is made at the new master.
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { slotOf } from "../../../../src/tcp/slot.ts";
import { expectMigrationUnseen } from "../../../support/cluster-migration.ts";
import { startRedisCluster, type ClusterNode, type RedisCluster } from "../../../support/redis-cluster.ts";
import { uniquePrefix } from "../../../support/upstash.ts";

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

describe("a slot migration under load", () => {
  it("is invisible to lock users: no errors, one holder at a time, fences rising per lock", async () => {
    await expectMigrationUnseen(cluster, fromIoredis(client));
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
