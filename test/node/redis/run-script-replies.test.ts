import { describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError, type RedisClient } from "../../../src/index.ts";
import { failure } from "../../support/failure.ts";
import { garbling } from "../../support/garbling-client.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("the Redis client", () => {
  // Type-checked by `npm test` too: a wrapper typed as fencelock calls it must fit, not only a generic one.
  it("may be any object whose evalsha and eval take string arguments, such as a logging wrapper", async () => {
    const redis = upstash();
    const calls: string[] = [];
    const wrapper = {
      evalsha: (sha1: string, keys: string[], args: string[]): Promise<unknown> => (calls.push("evalsha"), redis.evalsha(sha1, keys, args)),
      eval: (script: string, keys: string[], args: string[]): Promise<unknown> => (calls.push("eval"), redis.eval(script, keys, args)),
    };
    const locks = createLocks({ redis: wrapper, prefix: uniquePrefix("wrapper") });
    expect(await (await locks.acquire("job")).release()).toBe("released");
    expect(calls.filter((call) => call === "evalsha")).toHaveLength(2);
  });
});

describe("a reply that is not one of our scripts' is LockUnavailableError, never read as a lock state", () => {
  const held = async (reply: unknown) => {
    const garbage: { reply?: unknown } = {};
    const prefix = uniquePrefix("garbage");
    const locks = createLocks({ redis: garbling(garbage), prefix });
    const lease = await locks.acquire("held");
    garbage.reply = reply;
    return { locks, lease, observer: createLocks({ redis: upstash(), prefix }) };
  };

  it.each([[[]], [[1]], [[0, 5, -1, 7, 1, 2, 3]], [[1, 2, 3, 4, 5, 6]], [[1, 0.5]]])("%j: not busy, lost, expired or free", async (reply) => {
    const { locks, lease, observer } = await held(reply);
    // Redis ran each of these: the lock taken, the lease extended, still held, then released.
    expect((await failure(locks.tryAcquire("free"))).error).toBeInstanceOf(LockUnavailableError);
    expect((await failure(lease.heartbeat())).error).toBeInstanceOf(LockUnavailableError);
    expect(lease.remainingMs()).toBeGreaterThan(0);
    expect((await failure(locks.inspect("held"))).error).toBeInstanceOf(LockUnavailableError);
    expect((await failure(lease.release())).error).toBeInstanceOf(LockUnavailableError);
    expect((await observer.inspect("held")).held).toBe(false);
  });

  it("refuses a fence no lease could have, from data under the prefix that is not fencelock's", async () => {
    const prefix = uniquePrefix("foreign-fence");
    const locks = createLocks({ redis: upstash(), prefix });
    const owner = "e".repeat(32);
    await upstash().hset(`${prefix}:{job}:lock`, { owner, fence: "-5", holds: 1 });
    await upstash().pexpire(`${prefix}:{job}:lock`, 10_000);
    const { error } = await failure(locks.acquire("job", { owner, waitMs: 0 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/acquire failed \(an unexpected reply \[1,-5,\d,\d+\]\); check the Redis URL, token and network; a lock it took is given back\./);
  });
});

describe("an unexpected reply says what it was, and what likely sent it", () => {
  const replying = (reply: unknown): RedisClient => ({ evalsha: async () => reply, eval: async () => reply });
  const owner = "ef".repeat(16);

  it.each([
    ["integers as text (ioredis' stringNumbers)", ["1", "5", "1", "1000"], /\(an unexpected reply \[1,5,1,1000\]\); integers came as text: use fromIoredis or fromNodeRedis; a lock it took is given back\.$/],
    ["integers as bigint", [1n, 5n, 1n, 1000n], /\[1,5,1,1000\]\); integers came as text: use fromIoredis or fromNodeRedis;/],
    ["an empty array", [], /\(an unexpected reply \[\]\); check the Redis URL, token and network; a lock it took is given back\.$/],
    ["OK", "OK", /\(an unexpected reply OK\); check the Redis URL, token and network; a lock it took is given back\.$/],
    ["an echo of the owner token", ["1", owner], /\(an unexpected reply \[1,…\]\); check the Redis URL/],
    ["a null-prototype object", Object.create(null), /\(an unexpected reply\); check the Redis URL/],
  ])("%s", async (_, reply, message) => {
    const { error } = await failure(createLocks({ redis: replying(reply) }).tryAcquire("job", { owner }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain(owner);
  });

  it("does not say a lock was given back for other scripts", async () => {
    const { error } = await failure(createLocks({ redis: replying([]) }).inspect("job"));
    expect(error.message).toMatch(/inspect failed \(an unexpected reply \[\]\); check the Redis URL, token and network\.$/);
  });
});
