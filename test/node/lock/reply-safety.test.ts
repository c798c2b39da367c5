// An acquire whose reply cannot be read gives back what Redis took for it, at once, and says what likely happened.
import { Redis as IORedis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { createLocks, LockUnavailableError, type Locks, type RedisClient } from "../../../src/index.ts";
import { garbling } from "../../support/garbling-client.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

// Long, so that a lock held until its lease ends cannot pass for one given back.
const LEASE_MS = 60_000;

/** What a caller rejected with, or a failure when it resolved. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(() => new Error("expected a rejection"), (error: unknown) => error as Error);
}

/** The observer sees the lock free well before its lease could end, with no one in line, and takes it. */
async function freeAtOnce(observer: Locks, name: string): Promise<void> {
  await until(async () => {
    const state = await observer.inspect(name);
    return !state.held && state.waiters === 0;
  }, 5_000);
  const lease = await observer.tryAcquire(name);
  expect(lease?.fence).toBeGreaterThan(0);
  await lease?.release();
}

describe.each([
  ["integers as text (ioredis with stringNumbers)", ["1", "5", "1", "1000"], /\(an unexpected reply \[1,5,1,1000\]\); integers came as text: use fromIoredis or fromNodeRedis; a lock it took is given back\.$/],
  ["an empty array", [], /\(an unexpected reply \[\]\); check the Redis URL, token and network; a lock it took is given back\.$/],
  ['"OK"', "OK", /\(an unexpected reply OK\); check the Redis URL, token and network; a lock it took is given back\.$/],
])("an acquire answered with %s", (_, reply, message) => {
  // Redis runs every script; the client then gets `reply` instead. Push wake-ups use the real client's stream.
  const setup = () => {
    const prefix = uniquePrefix("unreadable");
    const real = upstash();
    const client: RedisClient = { ...garbling({ reply }), subscribe: (channel) => real.subscribe(channel) };
    return { locks: createLocks({ redis: client, prefix, leaseMs: LEASE_MS }), observer: createLocks({ redis: upstash(), prefix }) };
  };

  it.each([
    ["tryAcquire", (locks: Locks) => locks.tryAcquire("job")],
    ["acquire with waitMs 0", (locks: Locks) => locks.acquire("job", { waitMs: 0 })],
    ["acquire with waitMs 5000 (push)", (locks: Locks) => locks.acquire("job", { waitMs: 5_000 })],
    ["acquire with waitMs 5000 (poll)", (locks: Locks) => locks.acquire("job", { waitMs: 5_000, wake: "poll" })],
  ])("%s rejects with LockUnavailableError, and the lock is free at once", async (_, call) => {
    const { locks, observer } = setup();
    const error = await rejection(call(locks));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(message);
    await freeAtOnce(observer, "job");
  });

  it("a waiter whose turn comes with such a reply gives back the lock and its place", async () => {
    const prefix = uniquePrefix("unreadable-turn");
    const armed = { on: false };
    const real = upstash();
    // Busy replies pass; once armed, a reply that grants the lock is replaced.
    const swap = async (sent: Promise<unknown>) => {
      const value = await sent;
      return armed.on && Array.isArray(value) && value[0] === 1 && value.length === 4 ? reply : value;
    };
    const client: RedisClient = {
      evalsha: (sha, keys, args) => swap(real.evalsha(sha, keys, args)),
      eval: (text, keys, args) => swap(real.eval(text, keys, args)),
    };
    const locks = createLocks({ redis: client, prefix, leaseMs: LEASE_MS });
    const observer = createLocks({ redis: upstash(), prefix });
    const holder = await observer.acquire("job");
    const waiting = rejection(locks.acquire("job", { waitMs: 10_000, wake: "poll" }));
    await until(async () => (await observer.inspect("job")).waiters === 1, 5_000);
    armed.on = true;
    await holder.release();
    const error = await waiting;
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(message);
    await freeAtOnce(observer, "job");
  });

  it("a reentrant acquire gives back only its own hold", async () => {
    const prefix = uniquePrefix("unreadable-join");
    const observer = createLocks({ redis: upstash(), prefix });
    const lease = await createLocks({ redis: upstash(), prefix, leaseMs: LEASE_MS }).acquire("job");
    const joining = createLocks({ redis: garbling({ reply }), prefix, leaseMs: LEASE_MS });
    expect(await rejection(joining.acquire("job", { owner: lease.owner, waitMs: 0 }))).toBeInstanceOf(LockUnavailableError);
    await until(async () => (await observer.inspect("job")).holds === 1, 5_000);
    expect(await observer.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lease.release()).toBe("released");
    expect((await observer.inspect("job")).held).toBe(false);
  });
});

describe("hand-written glue over ioredis with stringNumbers (no adapter)", () => {
  // The case: every acquire failed after the lock was taken, which then stayed held until its lease ended.
  it("rejects saying to wrap the client, and leaves the lock free", async () => {
    const io = new IORedis(inject("upstash").redisUrl, { stringNumbers: true });
    try {
      const glue: RedisClient = {
        evalsha: (sha, keys, args) => io.evalsha(sha, keys.length, ...keys, ...args),
        eval: (text, keys, args) => io.eval(text, keys.length, ...keys, ...args),
      };
      const prefix = uniquePrefix("string-numbers-glue");
      const error = await rejection(createLocks({ redis: glue, prefix, leaseMs: LEASE_MS }).acquire("job", { waitMs: 1_000 }));
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error.message).toMatch(/\(an unexpected reply \[1,\d+,1,60000\]\); integers came as text: use fromIoredis or fromNodeRedis; a lock it took is given back\.$/);
      await freeAtOnce(createLocks({ redis: upstash(), prefix }), "job");
    } finally {
      io.disconnect();
    }
  });
});

describe("an acquire whose request outlives its timeoutMs", () => {
  // As a client that retries in the background (TRYAGAIN while a slot moves, a dropped connection):
  // the script lands after the call gave up, and the give-back must come after it, not before.
  it("gives back the hold that request takes when it lands, not before it", async () => {
    const prefix = uniquePrefix("late-request");
    const real = upstash();
    let landed = false;
    const delayed = (send: () => Promise<unknown>) =>
      new Promise((resolve) => setTimeout(resolve, 1_200)).then(send).finally(() => (landed = true));
    const client: RedisClient = {
      evalsha: (sha, keys, args) => (landed ? real.evalsha(sha, keys, args) : delayed(() => real.evalsha(sha, keys, args))),
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const locks = createLocks({ redis: client, prefix, leaseMs: LEASE_MS, timeoutMs: 300 });
    // acquire.lua loaded: the late EVALSHA runs, rather than answering NOSCRIPT.
    await (await createLocks({ redis: upstash(), prefix }).tryAcquire("warm"))?.release();
    const error = await rejection(locks.tryAcquire("job"));
    expect(error.message).toMatch(/no answer within 300ms/);
    await until(async () => landed, 5_000);
    await freeAtOnce(createLocks({ redis: upstash(), prefix }), "job");
  });
});
