import { Redis } from "@upstash/redis";
import { Redis as Ioredis } from "ioredis";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError, type RedisClient } from "../../../src/index.ts";

/** Records calls, each answered as acquire.lua answers a busy lock; the tests below expect none, since bad input must change nothing. */
function recordingRedis(): RedisClient & { calls: number } {
  const client = {
    calls: 0,
    async evalsha() {
      client.calls++;
      return [0, 1000, -1, 0];
    },
    async eval() {
      client.calls++;
      return [0, 1000, -1, 0];
    },
  };
  return client;
}

function configError(fn: () => unknown): LockConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LockConfigError);
    return error as LockConfigError;
  }
  throw new Error("expected a LockConfigError");
}

describe("createLocks options", () => {
  it.each([
    [{}, /redis: expected a Redis client/],
    [{ redis: {} }, /redis: expected a Redis client/],
    [{ redis: recordingRedis(), leaseMs: -1 }, /leaseMs: must be at least 100 ms/],
    [{ redis: recordingRedis(), leaseMs: 1.5 }, /leaseMs: must be a whole number/],
    [{ redis: recordingRedis(), leaseMs: "10s" }, /leaseMs: expected a number of milliseconds/],
    [{ redis: recordingRedis(), leaseMs: 1e12 }, /leaseMs: must be at most 3600000 ms/],
    [{ redis: recordingRedis(), waitMs: Number.NaN }, /waitMs/],
    [{ redis: recordingRedis(), prefix: "app{1}" }, /prefix: use 1-64 characters/],
    [{ redis: recordingRedis(), prefix: "" }, /prefix/],
    [{ redis: recordingRedis(), leaseMS: 5000 }, /unknown option "leaseMS"/],
  ])("rejects %o with a clear message", (options, message) => {
    const error = configError(() => createLocks(options as never));
    expect(error.code).toBe("LOCK_CONFIG");
    expect(error.message).toMatch(message);
  });

  it.each([
    [[], /quorum mode needs at least 3 independent Redis clients; for one Redis, pass its client alone/],
    [[recordingRedis(), recordingRedis()], /at least 3/],
    [[recordingRedis(), recordingRedis(), {}], /or an array of 3 or more for quorum mode/],
    // A hole would count toward the majority and never answer.
    [[recordingRedis(), recordingRedis(), , recordingRedis()], /or an array of 3 or more for quorum mode/],
  ])("rejects a quorum of %o before any request", (redis, message) => {
    expect(configError(() => createLocks({ redis } as never)).message).toMatch(message);
  });

  it("rejects a quorum that names one Redis twice: it would count one node's vote twice", () => {
    const a = recordingRedis();
    expect(configError(() => createLocks({ redis: [a, recordingRedis(), a] })).message).toMatch(/given twice/);
  });

  it("rejects a quorum with two @upstash/redis clients of one database (one URL)", () => {
    const client = (token: string) => new Redis({ url: "https://eu1-example.upstash.io", token, enableTelemetry: false });
    const message = configError(() => createLocks({ redis: [client("a"), client("b"), new Redis({ url: "https://us1-other.upstash.io", token: "c" })] })).message;
    expect(message).toMatch(/a Redis was given twice \(the same client, or two with one URL\)/);
    // Without a URL (variables unset), each call says so instead.
    const unset = () => new Redis({ url: undefined as unknown as string, token: "t", enableTelemetry: false });
    expect(() => createLocks({ redis: [unset(), unset(), unset()] })).not.toThrow();
  });

  it("rejects a non-object", () => {
    expect(configError(() => createLocks("redis://x" as never)).message).toMatch(/expected an options object/);
  });

  it("never mutates the caller's options", async () => {
    const options = Object.freeze({ redis: recordingRedis(), prefix: "app" });
    const locks = createLocks(options);
    expect(options).toEqual({ redis: options.redis, prefix: "app" });
    expect(await locks.tryAcquire("x")).toBeNull();
  });
});

describe("lock names and per-call options", () => {
  const redis = recordingRedis();
  const locks = createLocks({ redis });

  it.each([
    ["", /must not be empty/],
    ["x".repeat(513), /over the limit of 512/],
    ["bad\uD800surrogate", /unpaired UTF-16 surrogate/],
    [42, /expected a string, got number/],
  ])("rejects the name %j before any request", async (name, message) => {
    await expect(locks.tryAcquire(name as string)).rejects.toThrow(message);
    await expect(locks.acquire(name as string)).rejects.toBeInstanceOf(LockConfigError);
    await expect(locks.inspect(name as string)).rejects.toBeInstanceOf(LockConfigError);
    expect(redis.calls).toBe(0);
  });

  it.each([
    [{ waitMs: -5 }, /waitMs: must be at least 0 ms/],
    [{ leaseMs: 10 }, /leaseMs: must be at least 100 ms/],
    [{ owner: "alice" }, /owner: expected lease.owner/],
    [{ signal: "stop" }, /signal: expected an AbortSignal/],
    // One that cannot be listened to would fail inside the wait's timer.
    [{ signal: { throwIfAborted() {} } }, /signal: expected an AbortSignal/],
    [{ signal: { throwIfAborted() {}, addEventListener() {} } }, /signal: expected an AbortSignal/],
    [{ waitMS: 100 }, /unknown option "waitMS"/],
  ])("rejects acquire options %o", async (options, message) => {
    await expect(locks.acquire("job", options as never)).rejects.toThrow(message);
    expect(redis.calls).toBe(0);
  });

  it("rejects waitMs on tryAcquire, which never waits", async () => {
    await expect(locks.tryAcquire("job", { waitMs: 100 } as never)).rejects.toThrow(/unknown option "waitMs"/);
  });

  it.each([
    [{ name: "job", owner: "A".repeat(32), fence: 5 }, /owner/],
    [{ name: "job", owner: "a".repeat(32), fence: 1.5 }, /fence/],
    [{ name: "job", owner: "a".repeat(32), fence: -1 }, /fence/],
    [{ name: "job", owner: "a".repeat(32), fence: 2 ** 53 }, /fence/],
    [{ name: "job", owner: "a".repeat(32), fence: "12" }, /fence/],
    [{ name: "", owner: "a".repeat(32), fence: 12 }, /must not be empty/],
    // A lease sent as JSON and passed on as text, unparsed: told it is no lease, not a bad name.
    [JSON.stringify({ name: "job", owner: "a".repeat(32), fence: 12 }), /^Invalid lease to resume: expected lease.owner/],
    [null, /^Invalid lease to resume: expected lease.owner/],
  ])("refuses to resume a malformed or forged lease %o", (held, message) => {
    expect(configError(() => locks.resume(held as never)).message).toMatch(message);
  });
});

describe("createFencedStore options", () => {
  // A fence may run 1 s ahead of the clock, so an expired record refuses fences minted ttlMs less 1 s ago.
  it.each([
    [1_999, /ttlMs: must be at least 2000 ms/],
    [1.5e3, /ttlMs: must be at least 2000 ms/],
    [11 * 365 * 86_400_000, /ttlMs: must be at most/],
  ])("rejects ttlMs %s, before any request", (ttlMs, message) => {
    const redis = recordingRedis();
    expect(configError(() => createFencedStore({ redis, ttlMs })).message).toMatch(message);
    expect(redis.calls).toBe(0);
  });

  it("rejects a quorum's array, saying that a store keeps its data on one Redis", () => {
    const nodes = [recordingRedis(), recordingRedis(), recordingRedis()];
    expect(configError(() => createFencedStore({ redis: nodes as never })).message).toMatch(/redis: a fenced store keeps its data on one Redis/);
  });
});

describe("a TCP client passed as it is", () => {
  // Its evalsha takes (sha, numkeys, ...keys, ...args): unwrapped, every call would fail on Redis.
  it("is refused with the adapter to use, before any call", () => {
    const ioredis = new Ioredis({ lazyConnect: true });
    const nodeRedis = createClient();
    expect(() => createLocks({ redis: ioredis as never })).toThrow(/redis: an ioredis client goes through its adapter: fromIoredis\(client\) from fencelock\/ioredis/);
    expect(() => createLocks({ redis: [ioredis, ioredis, ioredis] as never })).toThrow(/fromIoredis\(client\)/);
    expect(() => createFencedStore({ redis: ioredis as never })).toThrow(/fromIoredis\(client\)/);
    expect(() => createLocks({ redis: nodeRedis as never })).toThrow(/redis: a node-redis client goes through its adapter: fromNodeRedis\(client\) from fencelock\/node-redis/);
    ioredis.disconnect();
  });
});
