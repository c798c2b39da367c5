// Locks in Deno: the library's source, unmodified, over the real @upstash/redis client.
import assert from "node:assert/strict";
import { Redis } from "@upstash/redis";
import { createLocks, LockLostError, LockTimeoutError, LockUnavailableError } from "../../src/index.ts";
import { scriptSha1 } from "../../src/redis/run-script.ts";
import * as scripts from "../../src/redis/scripts.gen.ts";
import { redisFromEnv, sleep, uniquePrefix } from "./support.ts";

const newLocks = (label: string, options: { leaseMs?: number; waitMs?: number } = {}) =>
  createLocks({ redis: redisFromEnv(), prefix: uniquePrefix(label), ...options });

Deno.test("tryAcquire: one holder at a time; busy is null, not an error", async () => {
  const locks = newLocks("exclusion");
  const first = await locks.tryAcquire("order:42");
  assert.ok(first, "a free lock is acquired");
  assert.equal(await locks.tryAcquire("order:42"), null, "a held lock is busy");
  const other = await locks.tryAcquire("order:43");
  assert.ok(other, "another name is not blocked");

  assert.equal(await first.release(), "released");
  const next = await locks.tryAcquire("order:42");
  assert.ok(next, "free again after release");
  assert.ok(next.fence > first.fence, "the next holder gets a higher fence");
  await next.release();
  await other.release();
});

Deno.test("acquire: waits for a release, and times out with LockTimeoutError while the lock stays busy", async () => {
  const locks = newLocks("wait", { leaseMs: 5_000 });
  const holder = await locks.acquire("job");

  const started = performance.now();
  const timedOut = await locks.acquire("job", { waitMs: 200 }).catch((error: unknown) => error);
  const waited = performance.now() - started;
  assert.ok(timedOut instanceof LockTimeoutError, `expected LockTimeoutError, got ${timedOut}`);
  assert.equal(timedOut.code, "LOCK_TIMEOUT");
  assert.ok(timedOut.retryAfterMs > 4_000 && timedOut.retryAfterMs <= 5_000, `retryAfterMs ${timedOut.retryAfterMs}`);
  assert.ok(waited >= 150 && waited < 2_000, `waited ${waited} ms for a 200 ms budget`);

  setTimeout(() => void holder.release(), 150);
  const waiter = await locks.acquire("job", { waitMs: 3_000 });
  assert.ok(waiter.fence > holder.fence);
  assert.equal(holder.signal.aborted, true, "the released lease's signal has aborted");
  await waiter.release();
});

Deno.test("push: a release hands the lock straight to a waiter listening over server-sent events", async () => {
  const locks = newLocks("push", { leaseMs: 10_000 });
  const holder = await locks.acquire("job");
  const acquireSha1 = scriptSha1(scripts.acquire);
  let attempts = 0;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    if (String(init?.body).includes(acquireSha1)) attempts++;
    return realFetch(input, init);
  };
  try {
    setTimeout(() => void holder.release(), 300);
    const waiter = await locks.acquire("job", { waitMs: 8_000, wake: "push" });
    // The first attempt and the one after the stream confirmed; none after the release.
    assert.equal(attempts, 2);
    assert.ok(waiter.fence > holder.fence);
    const state = await locks.inspect("job");
    assert.equal(state.held, true);
    assert.equal(state.fence, waiter.fence);
    assert.equal(state.holds, 1);
    assert.equal(await waiter.release(), "released");
  } finally {
    globalThis.fetch = realFetch;
  }
});

Deno.test("fences rise with every new holder and are safe integers", async () => {
  const locks = newLocks("fences");
  const fences: number[] = [];
  for (let i = 0; i < 5; i++) {
    const lease = await locks.acquire("counter");
    fences.push(lease.fence);
    await lease.release();
  }
  for (const fence of fences) assert.ok(Number.isSafeInteger(fence) && fence > 0, `fence ${fence}`);
  for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(" ")}`);
});

Deno.test("heartbeat keeps the lease past its length; release then answers released", async () => {
  const locks = newLocks("heartbeat", { leaseMs: 400 });
  const lease = await locks.acquire("report");
  for (let i = 0; i < 3; i++) {
    await sleep(200);
    await lease.heartbeat();
  }
  // 600 ms in: a 400 ms lease without heartbeats would have gone.
  assert.equal(await locks.tryAcquire("report"), null, "still held thanks to the heartbeats");
  assert.ok(lease.remainingMs() > 200, `remainingMs ${lease.remainingMs()}`);
  const state = await locks.inspect("report");
  assert.deepEqual({ held: state.held, fence: state.fence, holds: state.holds }, { held: true, fence: lease.fence, holds: 1 });
  assert.ok(!JSON.stringify(state).includes(lease.owner), "inspect never shows the owner");

  assert.equal(await lease.release(), "released");
  assert.equal(lease.signal.aborted, true);
  assert.equal((await locks.inspect("report")).held, false);
});

Deno.test("a lapsed lease: release answers expired, heartbeat throws LockLostError and cannot revive it", async () => {
  const locks = newLocks("lapse", { leaseMs: 150 });
  const lease = await locks.acquire("report");
  await sleep(250);
  assert.equal(lease.remainingMs(), 0);
  assert.equal(lease.signal.aborted, true, "the signal aborts when the lease lapses");
  assert.ok(lease.signal.reason instanceof LockLostError);
  await assert.rejects(lease.heartbeat(), LockLostError);

  // The same holder, continued elsewhere, is told the truth by the server too.
  const resumed = locks.resume({ name: lease.name, owner: lease.owner, fence: lease.fence });
  await assert.rejects(resumed.heartbeat(), LockLostError);
  assert.equal(await lease.release(), "expired");

  // A longer lease: with 150 ms, a reply slowed past 135 ms by a busy machine is given back (null).
  const next = await locks.tryAcquire("report", { leaseMs: 5_000 });
  assert.ok(next && next.fence > lease.fence);
  await next.release();
});

Deno.test("reentrant acquire: same fence, one more hold; the lock is free only after the last release", async () => {
  const locks = newLocks("reentrant");
  const outer = await locks.acquire("cart:7");
  const inner = await locks.acquire("cart:7", { owner: outer.owner });
  assert.equal(inner.fence, outer.fence, "re-entering keeps the fence");
  assert.equal((await locks.inspect("cart:7")).holds, 2);

  assert.equal(await inner.release(), "released");
  assert.equal(await locks.tryAcquire("cart:7"), null, "one hold left: still busy for others");
  assert.equal((await locks.inspect("cart:7")).holds, 1);

  assert.equal(await outer.release(), "released");
  const other = await locks.tryAcquire("cart:7");
  assert.ok(other, "free after the last hold is released");
  assert.ok(other.fence > outer.fence);
  await other.release();
});

Deno.test("resume: a lease continued with a new client (another invocation) can heartbeat and release", async () => {
  const prefix = uniquePrefix("resume");
  const first = createLocks({ redis: redisFromEnv(), prefix });
  const lease = await first.acquire("upload:9");
  const held = { name: lease.name, owner: lease.owner, fence: lease.fence };

  const second = createLocks({ redis: redisFromEnv(), prefix });
  const resumed = second.resume(held);
  assert.equal(resumed.remainingMs(), 0, "not trusted until confirmed");
  await resumed.heartbeat();
  assert.ok(resumed.remainingMs() > 5_000);
  assert.equal(await resumed.release(), "released");
  assert.equal((await first.inspect("upload:9")).held, false);
});

Deno.test("withLock: returns fn's value, releases after it, and releases when fn throws without masking the error", async () => {
  const locks = newLocks("withlock");
  let fence = 0;
  const value = await locks.withLock("invoice:1", (lease) => {
    fence = lease.fence;
    return "done";
  });
  assert.equal(value, "done");
  assert.equal((await locks.inspect("invoice:1")).held, false);

  const boom = new Error("payment provider down");
  await assert.rejects(
    locks.withLock("invoice:1", async (lease) => {
      assert.ok(lease.fence > fence);
      assert.equal(await locks.tryAcquire("invoice:1"), null, "held while fn runs");
      throw boom;
    }),
    (error) => error === boom,
  );
  const after = await locks.tryAcquire("invoice:1");
  assert.ok(after, "released although fn threw");
  await after.release();
});

Deno.test("await using releases the lease at the end of the block", async () => {
  const locks = newLocks("using");
  let signal: AbortSignal;
  {
    await using lease = await locks.acquire("block");
    signal = lease.signal;
    assert.equal(await locks.tryAcquire("block"), null);
  }
  assert.equal(signal.aborted, true);
  const again = await locks.tryAcquire("block");
  assert.ok(again, "free after the block");
  await again.release();
});

Deno.test("a refused token is LockUnavailableError, never mistaken for a busy lock", async () => {
  const url = Deno.env.get("UPSTASH_REDIS_REST_URL")!;
  const redis = new Redis({ url, token: "not-the-token", retry: { retries: 0 } });
  const locks = createLocks({ redis, prefix: uniquePrefix("unavailable") });
  const error = await locks.tryAcquire("x").catch((e: unknown) => e);
  assert.ok(error instanceof LockUnavailableError, `expected LockUnavailableError, got ${error}`);
  assert.match(error.message, /UPSTASH_REDIS_REST_TOKEN/);
});
