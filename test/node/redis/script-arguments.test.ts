// The scripts check the numbers they write with before their first write, whoever runs them: a
// TTL Redis refuses halfway would leave a lock that never expires, or a prefix no store can use.
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks } from "../../../src/index.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

/** Each key's type, whether it has a TTL, and its contents, one line a key. */
const SNAPSHOT = `local out = {}
for _, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k).ok
  local v = {}
  if t == 'hash' then v = redis.call('HGETALL', k)
  elseif t == 'zset' then v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif t == 'string' then v = {redis.call('GET', k)} end
  local ttl = redis.call('PTTL', k)
  table.insert(out, k .. ' ' .. t .. ' ' .. (ttl > 0 and 'ttl' or tostring(ttl)) .. ' ' .. table.concat(v, ','))
end
return out`;

/** Runs `script` directly with `args`, and expects a refusal that leaves `keys` as they were. */
async function expectRefused(script: scripts.LuaScript, keys: string[], args: string[], watched = keys) {
  const redis = upstash();
  const before = await redis.eval(SNAPSHOT, watched, []);
  await expect(redis.eval(script.text, keys, args)).rejects.toThrow(/fencelock: malformed/);
  expect(await redis.eval(SNAPSHOT, watched, [])).toEqual(before);
}

const BAD_MS = ["1.5", "abc", "", "-5", "1e3", "0x10", "99999999999999999999"];

describe("scripts run directly with malformed numbers", () => {
  async function lockWithHistory(label: string) {
    const prefix = uniquePrefix(label);
    const locks = createLocks({ redis: upstash(), prefix });
    const lease = await locks.acquire("job");
    const { lock, fence, queue, alive } = lockKeys(prefix, "job");
    return { locks, lease, prefix, keys: [lock, fence, queue, alive] };
  }

  it.each(BAD_MS)("acquire refuses leaseMs %j on a free lock, minting no fence", async (leaseMs) => {
    const { lease, keys } = await lockWithHistory("acquire-lease");
    await lease.release();
    await expectRefused(scripts.acquire, keys, ["owner", "ticket", leaseMs, "70000", "0"]);
  });

  it.each(BAD_MS)("acquire refuses fenceTtlMs or queueMs %j, queueing no one and joining no hold", async (bad) => {
    const { lease, keys } = await lockWithHistory("acquire-ttl");
    await expectRefused(scripts.acquire, keys, ["other", "ticket", "10000", bad, "2000"]);
    await expectRefused(scripts.acquire, keys, ["other", "ticket", "10000", "70000", bad]);
    // Its own holder's join counts no hold.
    await expectRefused(scripts.acquire, keys, [lease.owner, "ticket", bad, "70000", "0"]);
  });

  it.each(BAD_MS)("heartbeat refuses leaseMs or fenceTtlMs %j, extending nothing", async (bad) => {
    const { lease, keys } = await lockWithHistory("heartbeat");
    const [lock = "", fence = ""] = keys;
    await expectRefused(scripts.heartbeat, [lock, fence], [lease.owner, String(lease.fence), bad, "70000"]);
    await expectRefused(scripts.heartbeat, [lock, fence], [lease.owner, String(lease.fence), "10000", bad]);
  });

  it.each(BAD_MS)("adopt (quorum mode) refuses fenceTtlMs %j, raising no fence", async (bad) => {
    const { lease, keys } = await lockWithHistory("adopt");
    const [lock = "", fence = ""] = keys;
    const higher = String(lease.fence + 1_000_000);
    await expectRefused(scripts.adopt, [lock, fence], [lease.owner, "ticket", String(lease.fence), higher, bad]);
  });

  it.each(BAD_MS)("release refuses the retry window %j, releasing nothing", async (bad) => {
    const { lease, keys, locks, prefix } = await lockWithHistory("release");
    const released = lockKeys(prefix, "job", lease.fence).released ?? "";
    await expectRefused(scripts.release, [...keys, released], [lease.owner, String(lease.fence), "id", bad]);
    expect((await locks.inspect("job")).fence).toBe(lease.fence);
  });

  // acquire.lua queues any ticket; release.lua takes its numbers only as acquire.lua would.
  it.each(["007", "99999999999999999999"])("release hands the lock to no waiter whose ticket's leaseMs is %j, and leaves none without a TTL", async (bad) => {
    const { lease, keys, locks, prefix } = await lockWithHistory("release-ticket");
    const redis = upstash();
    const ticket = `aa.bb.${bad}.70000.cc`;
    // Queued for a minute: the release must find it in line however slow the machine.
    expect(await redis.eval(scripts.acquire.text, keys, ["bb", ticket, "10000", "70000", "60000"])).toEqual([0, expect.any(Number), 0, lease.fence]);
    const released = lockKeys(prefix, "job", lease.fence).released ?? "";
    expect(await redis.eval(scripts.release.text, [...keys, released], [lease.owner, String(lease.fence), "id", "60000"])).toEqual([1, 0]);
    expect(await locks.inspect("job")).toMatchObject({ held: false });
    expect(await redis.pttl(keys[0] ?? "")).toBe(-2);
  });

  it.each(["1.5", "abc", "", "-5", "1e3"])("store-ttl refuses ttlMs %j, so the prefix's stores still work", async (bad) => {
    const prefix = uniquePrefix("store-ttl");
    const key = `${prefix}:store-ttl`;
    await expectRefused(scripts.storeTtl, [key], [bad]);
    const store = createFencedStore({ redis: upstash(), prefix });
    await store.write("doc", "value", 1);
    expect(await store.read("doc")).toEqual({ value: "value", fence: 1 });
  });

  it.each(["1.5", "abc", "", "-5", "1e3"])("store-fence refuses ttlMs %j, storing nothing", async (bad) => {
    const prefix = uniquePrefix("store-fence");
    const store = createFencedStore({ redis: upstash(), prefix });
    await store.write("doc", "honest", 100);
    const keys = [`${prefix}:{doc}:data`, `${prefix}:{doc}:written:direct`];
    await expectRefused(scripts.storeFence, keys, ["101", bad, "60000", JSON.stringify("evil")]);
    await expectRefused(scripts.storeFence, keys, ["101", bad, "60000"]);
    expect(await store.read("doc")).toEqual({ value: "honest", fence: 100 });
  });
});
