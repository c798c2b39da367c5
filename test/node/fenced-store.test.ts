import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError, LockUnavailableError, StaleFenceError, type RedisClient } from "../../src/index.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { sleep } from "../../src/wait.ts";
import { withFetch } from "../support/fetch-wrappers.ts";
import { garbling } from "../support/garbling-client.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

function setup(label: string, leaseMs = 10_000) {
  const prefix = uniquePrefix(label);
  const redis = upstash();
  return { redis, prefix, locks: createLocks({ redis, prefix, leaseMs }), store: createFencedStore({ redis, prefix }) };
}

async function staleError(promise: Promise<unknown>): Promise<StaleFenceError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StaleFenceError);
  return error as StaleFenceError;
}

describe("fenced store", () => {
  it("rejects the paused holder's write after the next holder wrote (Kleppmann's scenario)", async () => {
    const { locks, store } = setup("kleppmann", 200);
    const a = await locks.acquire("invoice:42");
    await sleep(300); // A pauses (GC, isolate freeze) past its lease.
    const b = await locks.acquire("invoice:42", { waitMs: 0 });
    expect(b.fence).toBeGreaterThan(a.fence);
    await store.write("invoice:42", { paidBy: "B" }, b.fence);

    const error = await staleError(store.write("invoice:42", { paidBy: "A" }, a.fence));
    expect(error).toMatchObject({ code: "STALE_FENCE", fence: a.fence, highestFence: b.fence });
    expect(error.message).toBe(`Fence ${a.fence} refused at "invoice:42": fences below ${b.fence} are stale here.`);
    // A claim (or a fenced read) is refused the same way, in the same words.
    expect((await staleError(store.read("invoice:42", { fence: a.fence }))).message).toMatch(/^Fence \d+ refused at "invoice:42"/);
    expect(await store.read("invoice:42")).toEqual({ value: { paidBy: "B" }, fence: b.fence });
  });

  it("keeps B's read-modify-write when A's delayed write lands before B's first write (the claim gap)", async () => {
    const { locks, store } = setup("gap", 200);
    await store.write("counter", 10, 1);
    const a = await locks.acquire("counter");
    const aRead = await store.read<number>("counter"); // A reads 10, then pauses past its lease.
    await sleep(300);
    const b = await locks.acquire("counter", { waitMs: 0 });
    const bRead = await store.read<number>("counter", { fence: b.fence }); // B claims, then reads 10.

    // A's delayed write arrives in the gap before B's write: the claim refuses it.
    await staleError(store.write("counter", (aRead?.value ?? 0) + 1, a.fence));
    await store.write("counter", (bRead?.value ?? 0) + 1, b.fence);
    expect(await store.read("counter")).toEqual({ value: 11, fence: b.fence });
  });

  it("shows the gap without claim: A's write lands, then B overwrites it and one increment is lost", async () => {
    const { locks, store } = setup("gap-control", 200);
    await store.write("counter", 10, 1);
    const a = await locks.acquire("counter");
    const aRead = await store.read<number>("counter");
    await sleep(300);
    const b = await locks.acquire("counter", { waitMs: 0 });
    const bRead = await store.read<number>("counter"); // no claim
    await store.write("counter", (aRead?.value ?? 0) + 1, a.fence); // accepted: nothing higher seen yet
    await store.write("counter", (bRead?.value ?? 0) + 1, b.fence);
    expect((await store.read<number>("counter"))?.value).toBe(11); // two increments, counter moved by one
  });

  it("round-trips strings, numbers, JSON and unicode exactly", async () => {
    const { store } = setup("values");
    const values = ["123", "OK", "", "v:x", 0, -1.5, null, true, [1, "2"], { nested: { emoji: "🎟", "{": "}" } }];
    for (const [i, value] of values.entries()) {
      await store.write(`item:${i}`, value, 5);
      expect(await store.read(`item:${i}`)).toEqual({ value, fence: 5 });
    }
  });

  it("accepts equal fences, reports the highest fence seen, and reads null before any write", async () => {
    const { store } = setup("equal");
    expect(await store.read("doc")).toBeNull();
    await store.claim("doc", 7);
    expect(await store.read("doc")).toBeNull();
    await store.write("doc", "a", 7);
    await store.write("doc", "b", 7);
    await store.claim("doc", 9);
    expect(await store.read("doc")).toEqual({ value: "b", fence: 9 });
    expect(await staleError(store.claim("doc", 8))).toMatchObject({ highestFence: 9 });
  });

  // The last two are safe integers, but later than any lease could have minted (an hour ahead of now, in µs).
  const future = (Date.now() + 2 * 3_600_000) * 1000;
  it.each([0, -1, 1.5, 2 ** 53, Number.NaN, "12", null, 2 ** 53 - 1, future])("refuses the malformed fence %s before any request", async (fence) => {
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
    for (const [value, shown] of [[undefined, /undefined/], [() => 1, /function/], [10n, /bigint/], [circular, /without cycles, got object/]] as const) {
      await expect(store.write("doc", value, 1)).rejects.toThrow(shown);
      await expect(store.write("doc", value, 1)).rejects.toBeInstanceOf(LockConfigError);
    }
    expect(await store.read("doc")).toBeNull();
  });

  it("rejects undefined values and keeps data without TTL unless asked", async () => {
    const { redis, prefix, locks, store } = setup("ttl");
    await expect(store.write("doc", undefined, 1)).rejects.toThrow(/expected a JSON value/);
    await store.write("doc", 1, 1);
    expect(await redis.pttl(`${prefix}:{doc}:data`)).toBe(-1);
    const expiring = createFencedStore({ redis, prefix, ttlMs: 60_000 });
    await locks.withLock("temp", (lease) => expiring.write("temp", 1, lease.fence));
    expect(await redis.pttl(`${prefix}:{temp}:data`)).toBeGreaterThan(59_000);
  });

  // What lets a retry of a write whose reply was lost be told the truth (see below).
  it("leaves one record per write, for a minute, and none for a claim or a read", async () => {
    const { redis, prefix, store } = setup("write-record");
    await store.write("doc", 1, 1);
    await store.claim("doc", 2);
    await store.read("doc", { fence: 2 });
    await store.read("doc");
    const records = await redis.keys(`${prefix}:{doc}:written:*`);
    expect(records).toHaveLength(1);
    expect(await redis.pttl(records[0] ?? "")).toBeGreaterThan(50_000);
    expect(await redis.pttl(records[0] ?? "")).toBeLessThanOrEqual(60_000);
  });

  it("with a client that does not retry, a write whose request failed never lands after the next one", async () => {
    const prefix = uniquePrefix("no-retry");
    const warm = createFencedStore({ redis: upstash(), prefix });
    const store = createFencedStore({ redis: upstash({ retry: false }), prefix, timeoutMs: 100 });
    const fence = 1_785_000_000_000_000;
    await warm.write("doc", "v0", fence); // script loaded
    let failed = 0;
    await withFetch(
      (real) => async (input, init) => {
        if (failed++ < 2 && String(init?.body).includes("first")) throw new TypeError("fetch failed: connection reset");
        return real(input, init);
      },
      async () => {
        await expect(store.write("doc", "first", fence)).rejects.toBeInstanceOf(LockUnavailableError);
        await store.write("doc", "second", fence); // the same holder writes again
        await sleep(400); // a retrying client would send "first" again by now (after 50 + 136 ms)
      },
    );
    expect((await warm.read("doc"))?.value).toBe("second");
  });

  // As during a deploy that drops ttlMs: the record, with its highest fence, must not expire later.
  it("a store without ttlMs keeps data it wrote even if another store gave the record a TTL", async () => {
    const { redis, prefix, locks, store } = setup("ttl-mixed", 200);
    const expiring = createFencedStore({ redis, prefix, ttlMs: 1_000 });
    await locks.withLock("doc", (lease) => expiring.write("doc", "v0", lease.fence));
    const a = await locks.acquire("doc");
    await sleep(300); // A pauses past its lease
    const b = await locks.acquire("doc", { waitMs: 0 });
    await store.write("doc", "by B", b.fence); // the store that promises to keep data
    await b.release();
    await sleep(1_200);
    await staleError(store.write("doc", "by stale A", a.fence));
    expect(await store.read("doc")).toEqual({ value: "by B", fence: b.fence });
  });

  it("refuses a paused holder's write after the newer holder's record expired (ttlMs)", async () => {
    const { redis, prefix, locks } = setup("ttl-stale", 200);
    const store = createFencedStore({ redis, prefix, ttlMs: 1_000 });
    const a = await locks.acquire("doc");
    await sleep(300); // A pauses past its lease
    const b = await locks.acquire("doc", { waitMs: 0 });
    await store.write("doc", "by B", b.fence);
    await b.release();
    await sleep(1_200); // idle past ttlMs: the record, and the highest fence it saw, expire
    expect(await store.read("doc")).toBeNull();
    // A's fence was minted before the record could have expired: it may be older than B's.
    await staleError(store.write("doc", "by stale A", a.fence));
    await staleError(store.claim("doc", a.fence));
    expect(await store.read("doc")).toBeNull();
    // A holder that came after is not held back.
    await locks.withLock("doc", (c) => store.write("doc", "by C", c.fence));
    expect((await store.read("doc"))?.value).toBe("by C");
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

describe("a fenced write retried after its reply was lost", () => {
  // The write reached Redis and was applied; its reply was lost, and @upstash/redis will send the
  // same request again. `meanwhile` runs in that gap, before the retry goes out.
  const replyLostThen = (meanwhile: () => Promise<unknown>, done: { n: number }) =>
    (real: typeof fetch): typeof fetch => async (input, init) => {
      const response = await real(input, init);
      if (done.n > 0 || !String(init?.body).includes("paid by A")) return response;
      done.n++;
      await response.text();
      await meanwhile();
      throw new TypeError("fetch failed: connection reset after the request was sent");
    };

  it("is told accepted, not stale, when the next holder claimed the resource before the retry", async () => {
    const { locks, store } = setup("write-retry-claimed", 200);
    await store.write("invoice:7", { paid: false }, 1); // script loaded
    const a = await locks.acquire("invoice:7");
    let seenByB: unknown;
    const gap = { n: 0 };
    const outcome = await withFetch(
      replyLostThen(async () => {
        await sleep(250); // A's lease lapses; B takes over and builds on what A wrote
        await locks.withLock("invoice:7", async (b) => {
          seenByB = (await store.read("invoice:7", { fence: b.fence }))?.value;
        });
      }, gap),
      () => store.write("invoice:7", { paid: "paid by A" }, a.fence).then(() => "accepted", (e: unknown) => e),
    );
    expect(gap.n).toBe(1);
    expect(seenByB).toEqual({ paid: "paid by A" });
    // StaleFenceError would tell A its write was refused, and A might undo what B built on.
    expect(outcome).toBe("accepted");
  });

  it("does not write its value again over the same holder's next write", async () => {
    const { locks, store } = setup("write-retry-again");
    const lease = await locks.acquire("invoice:8");
    await store.write("invoice:8", "draft", lease.fence); // script loaded
    const gap = { n: 0 };
    await withFetch(
      // Another task of the same holder writes next, while the first write's retry is pending.
      replyLostThen(() => store.write("invoice:8", "refunded by A", lease.fence), gap),
      () => store.write("invoice:8", "paid by A", lease.fence),
    );
    expect(gap.n).toBe(1);
    expect(await store.read("invoice:8")).toEqual({ value: "refunded by A", fence: lease.fence });
    await lease.release();
  });
});

describe("a fenced write that timed out", () => {
  // timeoutMs cannot withdraw a request already sent: a slow one lands after the call failed, with
  // the fence of the holder's next write. A new lease's higher fence is what makes it stale.
  it("may still land later, but never over a write made under the next lease", async () => {
    const prefix = uniquePrefix("slow-write");
    const locks = createLocks({ redis: upstash(), prefix });
    const warm = createFencedStore({ redis: upstash(), prefix });
    const store = createFencedStore({ redis: upstash({ retry: false }), prefix, timeoutMs: 100 });
    await warm.write("warm", "v0", 1); // script loaded
    await withFetch(
      (real) => async (input, init) => {
        if (String(init?.body).includes("first")) await sleep(400); // slow on its way to Redis
        return real(input, init);
      },
      async () => {
        const lease = await locks.acquire("doc");
        await expect(store.write("doc", "first", lease.fence)).rejects.toBeInstanceOf(LockUnavailableError);
        await lease.release();
        const next = await locks.acquire("doc");
        await store.write("doc", "second", next.fence);
        await sleep(600); // "first" reaches Redis now, and is refused as stale
        await next.release();
      },
    );
    expect((await warm.read("doc"))?.value).toBe("second");
  });
});
