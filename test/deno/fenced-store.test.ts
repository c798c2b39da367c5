// The fenced store in Deno: writes and claims checked by fence inside Redis, over @upstash/redis.
import assert from "node:assert/strict";
import { createFencedStore, createLocks, LockConfigError, StaleFenceError } from "../../src/index.ts";
import { redisFromEnv, sleep, uniquePrefix } from "./support.ts";

function setup(label: string, leaseMs = 10_000) {
  const redis = redisFromEnv();
  const prefix = uniquePrefix(label);
  return { locks: createLocks({ redis, prefix, leaseMs }), store: createFencedStore({ redis, prefix }) };
}

Deno.test("write and read back any JSON value with the fence that wrote it", async () => {
  const { store } = setup("roundtrip");
  assert.equal(await store.read("invoice:42"), null);
  const value = { paid: true, amount: 12.5, lines: ["a", "b"], note: null, unicode: "✓ ü" };
  await store.write("invoice:42", value, 100);
  assert.deepEqual(await store.read("invoice:42"), { value, fence: 100 });
  await store.write("invoice:42", "plain string", 100); // the same fence may write again
  assert.deepEqual(await store.read("invoice:42"), { value: "plain string", fence: 100 });
  await assert.rejects(store.write("invoice:42", undefined, 101), LockConfigError);
});

Deno.test("a stale write is refused with StaleFenceError carrying the highest fence, and the newer value stays", async () => {
  const { store } = setup("stale");
  await store.write("invoice:42", "refunded", 500);
  const error = await store.write("invoice:42", "paid", 400).catch((e: unknown) => e);
  assert.ok(error instanceof StaleFenceError, `expected StaleFenceError, got ${error}`);
  assert.equal(error.code, "STALE_FENCE");
  assert.equal(error.fence, 400);
  assert.equal(error.highestFence, 500);
  assert.deepEqual(await store.read("invoice:42"), { value: "refunded", fence: 500 });
});

Deno.test("claim registers a fence before any write: an older holder's late write can no longer land", async () => {
  const { store } = setup("claim");
  await store.write("counter", 10, 100);
  // The new holder (fence 101) claims and reads in one script before computing its update...
  assert.deepEqual(await store.read("counter", { fence: 101 }), { value: 10, fence: 101 });
  // ...so the old holder's delayed increment (fence 100) is refused instead of being lost later.
  await assert.rejects(store.write("counter", 11, 100), StaleFenceError);
  await store.write("counter", 11, 101);
  assert.deepEqual(await store.read("counter"), { value: 11, fence: 101 });

  await assert.rejects(store.claim("counter", 99), (e) => e instanceof StaleFenceError && e.highestFence === 101);
  await store.claim("counter", 102);
  await assert.rejects(store.write("counter", 12, 101), StaleFenceError);
});

Deno.test("the paused holder: its lease lapses, the next holder writes, and the old holder's write is refused", async () => {
  const { locks, store } = setup("paused", 150);
  const a = await locks.acquire("invoice:7");
  await store.claim("invoice:7", a.fence);
  await sleep(250); // A "pauses" past its lease

  const b = await locks.acquire("invoice:7");
  assert.ok(b.fence > a.fence);
  const current = await store.read<{ state: string }>("invoice:7", { fence: b.fence });
  assert.equal(current, null);
  await store.write("invoice:7", { state: "refunded" }, b.fence);

  // A wakes up believing it still holds the lock; the store refuses it.
  const error = await store.write("invoice:7", { state: "paid" }, a.fence).catch((e: unknown) => e);
  assert.ok(error instanceof StaleFenceError);
  assert.equal(error.highestFence, b.fence);
  assert.deepEqual(await store.read("invoice:7"), { value: { state: "refunded" }, fence: b.fence });
  assert.equal(await a.release(), "expired");
  assert.equal(await b.release(), "released");
});

Deno.test("withLock + fenced read-modify-write: concurrent increments are never lost", async () => {
  const { locks, store } = setup("increments");
  const increment = () =>
    locks.withLock("counter", async (lease) => {
      const current = await store.read<number>("counter", { fence: lease.fence });
      await store.write("counter", (current?.value ?? 0) + 1, lease.fence);
    }, { waitMs: 5_000 });
  await Promise.all(Array.from({ length: 6 }, increment));
  assert.equal((await store.read<number>("counter"))?.value, 6);
});
