// A slot migration under load on a real Cluster, for any adapter: workers take and give back
// locks in one slot while it moves key batch by key batch, as redis-cli --cluster reshard does.
import { expect } from "vitest";
import type { RedisClient, WakeSubscriber } from "../../src/core/client.ts";
import { createLocks } from "../../src/index.ts";
import { slotOf } from "../../src/tcp/slot.ts";
import { sleep } from "../../src/waiting/backoff.ts";
import type { ClusterNode, RedisCluster } from "./redis-cluster.ts";
import { uniquePrefix } from "./upstash.ts";

/** `count` lock names whose keys (`prefix:{name}:…`) are all in `slot`. */
export function namesInSlot(prefix: string, slot: number, count: number): string[] {
  const names: string[] = [];
  for (let i = 0; names.length < count; i++) if (slotOf(`${prefix}:{m${i}}`) === slot) names.push(`m${i}`);
  return names;
}

/** Moves `slot` from `source` to `target`, key batch by key batch; resolves to the number of keys moved. */
export async function migrate(slot: number, source: ClusterNode, target: ClusterNode, all: readonly ClusterNode[]): Promise<number> {
  await target.admin.call("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id);
  await source.admin.call("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id);
  await sleep(100); // meanwhile workers are sent on with ASK, or TRYAGAIN
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

/** `redis` with the messages its wake-up streams hear counted. */
function countingMessages(redis: RedisClient): { client: RedisClient; messages: { n: number } } {
  const messages = { n: 0 };
  const counted = (open: (channel: string) => WakeSubscriber) => (channel: string): WakeSubscriber => {
    const stream = open(channel);
    stream.on("message", () => messages.n++);
    return stream;
  };
  const client: RedisClient = { evalsha: (...call) => redis.evalsha(...call), eval: (...call) => redis.eval(...call) };
  if (redis.subscribe) client.subscribe = counted(redis.subscribe);
  if (redis.ssubscribe) client.ssubscribe = counted(redis.ssubscribe);
  return { client, messages };
}

/**
 * Six workers withLock three names of one slot (of the first master) through `redis` while the
 * slot moves to the second master: no worker sees an error, no two hold a lock at once, each
 * lock's fences rise, and contended locks are handed over by message.
 */
export async function expectMigrationUnseen(cluster: RedisCluster, redis: RedisClient): Promise<void> {
  const prefix = uniquePrefix("migrate");
  const [source, target] = [cluster.masters[0]!, cluster.masters[1]!];
  const slot = 100; // in the first master's third of the slots
  const names = namesInSlot(prefix, slot, 3);
  const { client, messages } = countingMessages(redis);
  const errors: unknown[] = [];
  const fences = new Map<string, number[]>(names.map((name) => [name, []]));
  const holding = new Set<string>();
  let overlaps = 0;
  let running = true;
  const worker = async (worker: number) => {
    const locks = createLocks({ redis: client, prefix, leaseMs: 10_000 });
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
  const cycles = () => names.map((name) => fences.get(name)!.length);
  const before = cycles();
  const moved = await migrate(slot, source, target, cluster.masters);
  const after = cycles();
  await sleep(700);
  const end = cycles();
  running = false;
  await Promise.all(workers);

  expect(errors).toEqual([]);
  expect(overlaps).toBe(0);
  for (const [name, list] of fences) {
    expect(list.every((fence, i) => i === 0 || fence > list[i - 1]!), `fences of ${name} rise`).toBe(true);
  }
  // Each lock taken after the move too: withLock drops a failed release (as TRYAGAIN mid-move, an
  // empty queue being a missing key), whose lock then sits out its lease with no error seen.
  expect(moved).toBeGreaterThan(0);
  expect(before.every((n) => n > 0), `each lock taken before the move: ${before}`).toBe(true);
  expect(end.every((n, i) => n > after[i]!), `each lock taken after the move: ${after} then ${end}`).toBe(true);
  expect(await target.admin.call("CLUSTER", "COUNTKEYSINSLOT", slot)).toBeGreaterThan(0);
  expect(await source.admin.call("CLUSTER", "COUNTKEYSINSLOT", slot)).toBe(0);
  // Contended locks handed over by message, before the move and after (on the target).
  expect(messages.n).toBeGreaterThan(0);
}
