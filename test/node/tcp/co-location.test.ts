// Co-location on a real 3-master Cluster, through each TCP adapter: with hashTag a lock lives in
// the slot of the user's own keys, so one user script can check its fence and write them at once.
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisClient, WakeSubscriber } from "../../../src/core/client.ts";
import { createLocks } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { fromNodeRedis } from "../../../src/node-redis.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { startRedisCluster, type RedisCluster } from "../../support/redis-cluster.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const NAME = "user:42/charge";
const BALANCE = "{user:42}:balance";
const hashTag = (name: string) => name.split("/")[0]!;

/** The user's own script: charges the balance only while the lock's fence is the lease's. */
const CHARGE = `
local lock, balance = KEYS[1], KEYS[2]
local fence = ARGV[1] -- the lease's
local amount = ARGV[2]
if redis.call('HGET', lock, 'fence') ~= fence then return 'stale' end
return redis.call('DECRBY', balance, amount)`;

/** A cluster client as the user holds it: fencelock's adapter of it, and its own commands. */
interface UserCluster {
  redis(): RedisClient;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

let servers: RedisCluster;
let ioredis: Cluster;
let nodeRedis: ReturnType<typeof createCluster>;
beforeAll(async () => {
  servers = await startRedisCluster();
  ioredis = new Cluster(servers.startNodes);
  nodeRedis = createCluster({ rootNodes: servers.startNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
  nodeRedis.on("error", () => {});
  await Promise.all([ioredis.ping(), nodeRedis.connect()]);
});
afterAll(async () => {
  await ioredis?.quit();
  await nodeRedis?.close();
  await servers?.stop();
});

const adapters: [string, () => UserCluster][] = [
  ["fromIoredis", () => ({
    redis: () => fromIoredis(ioredis),
    eval: (script, keys, args) => ioredis.eval(script, keys.length, ...keys, ...args),
    set: (key, value) => ioredis.set(key, value),
    get: (key) => ioredis.get(key),
  })],
  ["fromNodeRedis", () => ({
    redis: () => fromNodeRedis(nodeRedis),
    eval: (script, keys, args) => nodeRedis.eval(script, { keys, arguments: args }),
    set: (key, value) => nodeRedis.set(key, value),
    get: (key) => nodeRedis.get(key),
  })],
];

/** The server's slot of a key, and the keys of that slot on whichever master holds it. */
const keyslot = async (key: string) => Number(await servers.masters[0]!.admin.call("CLUSTER", "KEYSLOT", key));
const keysInSlot = async (slot: number) =>
  (await Promise.all(servers.masters.map(({ admin }) => admin.call("CLUSTER", "GETKEYSINSLOT", slot, 100) as Promise<string[]>))).flat();

/** `redis` with its acquire attempts and its streams' messages counted, and the shard channels it opened. */
async function watched(redis: RedisClient) {
  const acquireSha1 = scriptSha1(scripts.acquire);
  const seen = { acquires: 0, messages: 0, shardChannels: [] as string[] };
  const counted = (open: (channel: string) => WakeSubscriber) => (channel: string): WakeSubscriber => {
    const stream = open(channel);
    stream.on("message", () => seen.messages++);
    return stream;
  };
  const client: RedisClient = {
    evalsha: (sha1, keys, args) => ((seen.acquires += sha1 === acquireSha1 ? 1 : 0), redis.evalsha(sha1, keys, args)),
    eval: (script, keys, args) => redis.eval(script, keys, args),
  };
  if (redis.subscribe) client.subscribe = counted(redis.subscribe);
  if (redis.ssubscribe) client.ssubscribe = counted((channel) => (seen.shardChannels.push(channel), redis.ssubscribe!(channel)));
  return { client, seen };
}

describe.each(adapters)("co-location through %s", (_, make) => {
  it("keys a lock with hashTag in the slot of the user's keys tagged the same", async () => {
    const user = make();
    const prefix = uniquePrefix("colo-keys");
    const lease = await createLocks({ redis: user.redis(), prefix, hashTag }).acquire(NAME);
    const slot = await keyslot(BALANCE);
    expect(await keysInSlot(slot)).toEqual(expect.arrayContaining([`${prefix}:{user:42}:${NAME}:lock`, `${prefix}:{user:42}:${NAME}:fence`]));
    await lease.release();
  });

  it("lets one script of the user's check the lease's fence and write its balance, and refuses a stale fence", async () => {
    const user = make();
    const prefix = uniquePrefix("colo-charge");
    const locks = createLocks({ redis: user.redis(), prefix, hashTag });
    const lockKey = `${prefix}:{user:42}:${NAME}:lock`;
    await user.set(BALANCE, "100");
    const first = await locks.acquire(NAME);
    expect(await user.eval(CHARGE, [lockKey, BALANCE], [String(first.fence), "30"])).toBe(70);
    await first.release();
    const second = await locks.acquire(NAME);
    expect(await user.eval(CHARGE, [lockKey, BALANCE], [String(first.fence), "30"])).toBe("stale");
    expect(await user.get(BALANCE)).toBe("70");
    expect(await user.eval(CHARGE, [lockKey, BALANCE], [String(second.fence), "30"])).toBe(40);
    await second.release();
  });

  it("cannot run that script without hashTag: the lock is in its own slot (CROSSSLOT)", async () => {
    const user = make();
    const prefix = uniquePrefix("colo-plain");
    const lease = await createLocks({ redis: user.redis(), prefix }).acquire(NAME);
    const lockKey = `${prefix}:{${NAME}}:lock`;
    expect(await keysInSlot(await keyslot(lockKey))).toContain(lockKey);
    await expect(user.eval(CHARGE, [lockKey, BALANCE], [String(lease.fence), "30"])).rejects.toThrow(/CROSSSLOT/);
    await lease.release();
  });

  it("hands a waiter a tagged lock on release by push, on a shard channel in the tag's slot", async () => {
    const user = make();
    const prefix = uniquePrefix("colo-push");
    const held = await createLocks({ redis: user.redis(), prefix, hashTag }).acquire(NAME);
    const { client, seen } = await watched(user.redis());
    const waiting = createLocks({ redis: client, prefix, hashTag }).acquire(NAME, { waitMs: 20_000 });
    // Its first attempt, and the one after its stream confirmed; the next is a second away.
    await until(async () => seen.acquires >= 2, 10_000);
    const before = seen.acquires;
    await held.release();
    const lease = await waiting;
    expect(seen.acquires).toBe(before);
    expect(seen.messages).toBeGreaterThanOrEqual(1);
    expect(lease.fence).toBeGreaterThan(held.fence);
    expect(await Promise.all(seen.shardChannels.map(keyslot))).toEqual([await keyslot(BALANCE)]);
    await lease.release();
  });
});
