// What the fenced store refuses before or inside Lua (malformed, forged and future fences, bad
// options and values), and how it reads replies that are not quite store-fence.lua's.
import { describe, expect, it, vi } from "vitest";
import {
  createFencedStore, createLocks, LockConfigError, LockUnavailableError, StaleFenceError, type RedisClient,
} from "../../../../src/index.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { garbling } from "../../../support/garbling-client.ts";
import { setup } from "../../../support/locks-and-store.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("fenced store", () => {
  // The last two are safe integers, but later than any lease could have minted (an hour ahead of now, in µs).
  const future = (Date.now() + 2 * 3_600_000) * 1000;
  it.each([0, -1, 1.5, 2 ** 53, Number.NaN, "12", null, 2 ** 53 - 1, future])("refuses the malformed fence #%# (%s) before any request", async (fence) => {
    const { store } = setup("malformed");
    await expect(store.write("doc", 1, fence as number)).rejects.toBeInstanceOf(LockConfigError);
    await expect(store.claim("doc", fence as number)).rejects.toBeInstanceOf(LockConfigError);
    await expect(store.read("doc", { fence: fence as number })).rejects.toBeInstanceOf(LockConfigError);
    expect(await store.read("doc")).toBeNull();
  });

  it("refuses a forged fence inside Lua too, so no client can poison a resource", async () => {
    const { redis, prefix, store } = setup("forged");
    await store.write("doc", "honest", 100);
    const keys = [`${prefix}:{doc}:data`, `${prefix}:{doc}:written:forger`];
    for (const forged of ["1e20", "99999999999999999", "-5", "007", "12abc", ""]) {
      await expect(redis.eval(scripts.storeFence.text, keys, [forged, "0", "60000", "evil"])).rejects.toThrow(/malformed fence/);
      // No fence at all is a plain read, which claims nothing.
      if (forged) await expect(redis.eval(scripts.storeFence.text, keys, [forged, "0", "60000"])).rejects.toThrow(/malformed fence/);
    }
    expect(await store.read("doc")).toEqual({ value: "honest", fence: 100 });
    await store.write("doc", "honest again", 100); // and the honest holder is not held back
  });

  it("refuses a write run directly with a bad retry window or without its record's key, storing nothing", async () => {
    const { redis, prefix, store } = setup("script-inputs");
    await store.write("doc", "honest", 100);
    const keys = [`${prefix}:{doc}:data`, `${prefix}:{doc}:written:direct`];
    await expect(redis.eval(scripts.storeFence.text, keys, ["101", "0", "0", JSON.stringify("evil")])).rejects.toThrow();
    // The layout before write records: one key, [fence, ttlMs, value]. Its value must not pass for
    // the window, and the write for a claim answered "accepted".
    await expect(redis.eval(scripts.storeFence.text, [keys[0] ?? ""], ["101", "0", JSON.stringify("paid")])).rejects.toThrow();
    expect(await store.read("doc")).toEqual({ value: "honest", fence: 100 });
  });

  // Another service, or an older fencelock, may run the script itself: the script refuses too.
  it("refuses a fence from the future inside Lua too, so no client can lock honest holders out", async () => {
    const { redis, prefix, locks, store } = setup("forged-future");
    await store.write("doc", "honest", 100);
    const keys = [`${prefix}:{doc}:data`, `${prefix}:{doc}:written:forger`];
    for (const forged of ["9007199254740991", String((Date.now() + 2 * 3_600_000) * 1000)]) {
      await expect(redis.eval(scripts.storeFence.text, keys, [forged, "0", "60000", "evil"])).rejects.toThrow(/malformed fence/);
    }
    expect(await store.read("doc")).toEqual({ value: "honest", fence: 100 });
    await locks.withLock("doc", (lease) => store.write("doc", "next holder", lease.fence));
  });

  /** Runs `calls` with this process's clock `callerAheadMin` minutes ahead of Redis', given a fence `fenceAheadMin` minutes ahead of Redis'. */
  async function withCallerAhead<T>(callerAheadMin: number, fenceAheadMin: number, calls: (fence: number) => Promise<T>): Promise<T> {
    const redisNow = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(redisNow + callerAheadMin * 60_000);
    try {
      return await calls((redisNow + fenceAheadMin * 60_000) * 1000);
    } finally {
      vi.restoreAllMocks();
    }
  }

  // The caller's hour is the one that refuses: a fence it allows must not fail inside Lua as "unavailable".
  it("takes a fence its caller's clock allows when that clock runs minutes ahead of Redis'", async () => {
    const { store } = setup("caller-ahead");
    // 59 minutes ahead of the caller, 64 of Redis.
    const fence = await withCallerAhead(5, 64, async (fence) => (await store.write("doc", "written", fence), fence));
    expect(await store.read("doc")).toEqual({ value: "written", fence });
  });

  // Past the Lua's 70 minutes no retry helps: "unavailable" would invite retries (a 503 from requireFence) for good.
  it("refuses a fence its caller's clock allows but Redis' cannot, as bad input that changed nothing, not as Redis unavailable", async () => {
    const { store } = setup("far-ahead");
    // 55 minutes ahead of the caller, 75 of Redis.
    await withCallerAhead(20, 75, async (fence) => {
      for (const call of [store.write("doc", "written", fence), store.claim("doc", fence)]) {
        const error = await call.catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockConfigError);
        expect(String(error)).toMatch(/Invalid fence: over 70 min ahead of the store Redis' clock: forged, or the lock Redis' clock is far ahead \(check both\)/);
      }
    });
    expect(await store.read("doc")).toBeNull();
  });

  it("refuses read options it does not know, so a misspelled fence never skips the claim", async () => {
    const { store } = setup("read-options");
    await expect(store.read("doc", { fense: 5 } as never)).rejects.toThrow(/unknown option "fense"/);
    await expect(store.read("doc", { fence: "5" } as never)).rejects.toBeInstanceOf(LockConfigError);
    await expect(store.read("doc", null as never)).resolves.toBeNull();
    expect(await store.read("doc")).toBeNull();
  });

  it("names the type of a fence that is not a number, so \"12\" does not read as a valid fence", async () => {
    const { store } = setup("fence-type");
    await expect(store.write("doc", 1, "12" as never)).rejects.toThrow(/got string$/);
    await expect(store.claim("doc", 12n as never)).rejects.toThrow(/got bigint$/);
    await expect(store.write("doc", 1, -3)).rejects.toThrow(/got -3$/);
  });

  it("never shows an owner token passed where a fence belongs", async () => {
    const { store, locks } = setup("fence-owner");
    const lease = await locks.acquire("doc");
    for (const refused of [store.claim("doc", lease.owner as never), store.write("doc", 1, lease.owner as never)]) {
      const error = await refused.then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(LockConfigError);
      expect((error as Error).message).not.toContain(lease.owner);
    }
    expect(() => locks.resume({ name: "doc", owner: lease.owner, fence: lease.owner as never })).toThrow(/got string$/);
    await lease.release();
  });

  it("names read, not claim, when read({ fence }) is given a bad fence", async () => {
    const { store } = setup("read-fence");
    await expect(store.read("doc", { fence: -1 })).rejects.toThrow(/^Invalid read: fence: /);
  });

  // A hand-rolled REST client may answer integers as decimal text; the script's answer still counts.
  it("takes an accepted write as accepted from a client that answers integers as text", async () => {
    const { store, locks, redis, prefix } = setup("text-integers");
    const text = (reply: unknown) => (Array.isArray(reply) ? reply.map((v) => (typeof v === "number" ? String(v) : v)) : reply);
    const textual: RedisClient = {
      evalsha: async (sha, keys, args) => text(await redis.evalsha(sha, keys, args)) as never,
      eval: async (script, keys, args) => text(await redis.eval(script, keys, args)) as never,
    };
    const lease = await locks.acquire("doc");
    const viaText = createFencedStore({ redis: textual, prefix });
    await viaText.write("doc", { paid: true }, lease.fence);
    expect(await store.read("doc")).toEqual({ value: { paid: true }, fence: lease.fence });
    await expect(viaText.write("doc", { paid: false }, lease.fence - 1)).rejects.toBeInstanceOf(StaleFenceError);
  });

  it("refuses values JSON cannot hold, saying what they were", async () => {
    const { store } = setup("values-bad");
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const cases = [[undefined, /got undefined/], [() => 1, /got function/], [10n, /serialize a BigInt/], [{ nested: { n: 10n } }, /serialize a BigInt/],
      [circular, /JSON.stringify refused it: Converting circular structure to JSON$/]] as const;
    for (const [value, shown] of cases) {
      await expect(store.write("doc", value, 1)).rejects.toThrow(shown);
      await expect(store.write("doc", value, 1)).rejects.toBeInstanceOf(LockConfigError);
    }
    expect(await store.read("doc")).toBeNull();
  });
});

describe("a reply that is not store-fence.lua's", () => {
  it.each([[[]], [[1]], [[7, 1]], ["OK"]])("%j is LockUnavailableError, never read as stale or as nothing stored", async (reply) => {
    const garbage: { reply?: unknown } = {};
    const prefix = uniquePrefix("store-garbage");
    const store = createFencedStore({ redis: garbling(garbage), prefix });
    const lease = await createLocks({ redis: upstash(), prefix }).acquire("doc");
    await store.write("doc", "v1", lease.fence);
    garbage.reply = reply;
    await expect(store.write("doc", "v2", lease.fence)).rejects.toThrow(LockUnavailableError);
    await expect(store.claim("doc", lease.fence)).rejects.toThrow(LockUnavailableError);
    await expect(store.read("doc")).rejects.toThrow(LockUnavailableError);
    await lease.release();
  });
});
