// The fenced store as a holder uses it: stale writes refused (Kleppmann's scenario), the claim
// gap before a read-modify-write, values and fences as stored, and data kept with or without ttlMs.
import { describe, expect, it } from "vitest";
import { createFencedStore, LockConfigError, StaleFenceError } from "../../../../src/index.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { setup } from "../../../support/locks-and-store.ts";

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
    expect(error).toMatchObject({ code: "STALE_FENCE", resource: "invoice:42", fence: a.fence, highestFence: b.fence });
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

  it("rejects undefined values and keeps data without TTL unless asked", async () => {
    const { redis, prefix, locks, store } = setup("ttl");
    await expect(store.write("doc", undefined, 1)).rejects.toThrow(/expected a JSON value/);
    await store.write("doc", 1, 1);
    expect(await redis.pttl(`${prefix}:{doc}:data`)).toBe(-1);
    const expiring = createFencedStore({ redis, prefix: `${prefix}-expiring`, ttlMs: 60_000 });
    await locks.withLock("temp", (lease) => expiring.write("temp", 1, lease.fence));
    expect(await redis.pttl(`${prefix}-expiring:{temp}:data`)).toBeGreaterThan(59_000);
  });

  // Else a store whose ttlMs is longer (or none) takes a record that expired for a short one as
  // never written, and with it a fence older than the ones it forgot.
  it.each([
    ["without ttlMs", undefined, 2_000],
    ["with a longer ttlMs", 60_000, 2_000],
    ["with ttlMs, on a prefix kept without", 2_000, undefined],
  ])("refuses a store %s beside one with another ttlMs on its prefix, and changes nothing", async (_, ttlMs, firstTtlMs) => {
    const { redis, prefix, locks } = setup("ttl-mixed", 200);
    const first = createFencedStore({ redis, prefix, ttlMs: firstTtlMs });
    const a = await locks.acquire("doc");
    await sleep(300); // A pauses past its lease
    const b = await locks.acquire("doc", { waitMs: 0 });
    await first.write("doc", "by B", b.fence);
    await sleep(2_200); // a record kept for 2 s has expired
    const second = createFencedStore({ redis, prefix, ttlMs });
    const error = await second.write("doc", "by stale A", a.fence).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigError);
    expect((error as Error).message).toBe(
      `Invalid createFencedStore options: ttlMs: ${ttlMs ?? "none"} differs from ${firstTtlMs ?? "none"}, the stores' on prefix ` +
      `"${prefix}" (key ${prefix}:store-ttl); one that keeps data longer would take their expired records as never written. ` +
      "Use one ttlMs per prefix",
    );
    await expect(second.claim("doc", a.fence)).rejects.toThrow(LockConfigError);
    expect(await first.read("doc")).toEqual(firstTtlMs ? null : { value: "by B", fence: b.fence });
    // A plain read claims nothing, and needs no check.
    expect(await second.read("doc")).toEqual(firstTtlMs ? null : { value: "by B", fence: b.fence });
  });

  it("refuses a paused holder's write after the newer holder's record expired (ttlMs)", async () => {
    const { redis, prefix, locks } = setup("ttl-stale", 200);
    const store = createFencedStore({ redis, prefix, ttlMs: 2_000 });
    const a = await locks.acquire("doc");
    await sleep(300); // A pauses past its lease
    const b = await locks.acquire("doc", { waitMs: 0 });
    await store.write("doc", "by B", b.fence);
    await b.release();
    await sleep(2_200); // idle past ttlMs: the record, and the highest fence it saw, expire
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
