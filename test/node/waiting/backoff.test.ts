import { describe, expect, it, vi } from "vitest";
import { createLocks, LockTimeoutError, type Lease } from "../../../src/index.ts";
import { MIN_RETRY_MS, QUEUE_ALIVE_MS, retryDelayMs, sleep } from "../../../src/waiting/backoff.ts";
import { countingAcquires } from "../../support/counting-client.ts";
import { counting, withFetch } from "../../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

const busy = (busyForMs: number, position = 20) => ({ busyForMs, position });

describe("retryDelayMs", () => {
  it("waits at least 50 ms, grows with attempts, and caps at 800 ms", () => {
    const low = () => 0;
    const high = () => 0.999_999;
    expect(retryDelayMs(0, busy(10_000), 10_000, high)).toBeCloseTo(MIN_RETRY_MS, 0);
    expect(retryDelayMs(0, busy(10_000), 10_000, low)).toBe(MIN_RETRY_MS);
    expect(retryDelayMs(2, busy(10_000), 10_000, high)).toBeCloseTo(200, 0);
    expect(retryDelayMs(30, busy(10_000), 10_000, high)).toBeCloseTo(800, 0);
  });

  it("lets the first two in line look every 50 ms, and no faster; the third every 50-100 ms", () => {
    for (const place of [0, 1]) {
      expect(retryDelayMs(30, busy(10_000, place), 10_000, () => 0.999_999)).toBeCloseTo(MIN_RETRY_MS, 0);
      expect(retryDelayMs(30, busy(10_000, place), 10_000, () => 0)).toBe(MIN_RETRY_MS);
    }
    expect(retryDelayMs(30, busy(10_000, 2), 10_000, () => 0.999_999)).toBeCloseTo(100, 0);
    expect(retryDelayMs(30, busy(10_000, 2), 10_000, () => 0)).toBe(MIN_RETRY_MS);
  });

  it("looks again within 50 ms of the holder's TTL running out, and never past the caller's budget", () => {
    expect(retryDelayMs(3, busy(20), 10_000)).toBe(20 + MIN_RETRY_MS);
    expect(retryDelayMs(3, busy(10_000), 70)).toBe(70);
    expect(retryDelayMs(3, busy(10_000), 0)).toBe(0);
  });

  it("never looks again sooner than 50 ms, however little TTL the holder has left", () => {
    expect(retryDelayMs(0, busy(1, 0), 10_000, () => 0)).toBe(MIN_RETRY_MS);
    expect(retryDelayMs(0, busy(0, 0), 10_000, () => 0)).toBe(MIN_RETRY_MS);
  });

  it("backs off normally while a free lock is promised to an earlier waiter", () => {
    expect(retryDelayMs(0, busy(0, 2), 10_000)).toBeGreaterThanOrEqual(MIN_RETRY_MS);
  });

  it("keeps every pause shorter than a queued waiter's place is kept", () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      expect(retryDelayMs(attempt, busy(60_000), 60_000, () => 0.999_999)).toBeLessThan(QUEUE_ALIVE_MS / 2);
    }
  });

  it("spreads waiters with jitter", () => {
    const delays = new Set(Array.from({ length: 50 }, () => Math.round(retryDelayMs(4, busy(10_000), 10_000))));
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe("sleep", () => {
  it("ends early when one of its wakers is called, and leaves no waker or timer behind", async () => {
    vi.useFakeTimers();
    try {
      const wakers = new Set<() => void>();
      const sleeping = sleep(10_000, undefined, wakers);
      expect([wakers.size, vi.getTimerCount()]).toEqual([1, 1]);
      for (const wake of wakers) wake();
      await sleeping;
      expect([wakers.size, vi.getTimerCount()]).toEqual([0, 0]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("rejects with the signal's reason when aborted, and leaves no waker behind", async () => {
    const wakers = new Set<() => void>();
    const controller = new AbortController();
    const sleeping = sleep(10_000, controller.signal, wakers);
    controller.abort(new Error("caller gave up"));
    await expect(sleeping).rejects.toThrow("caller gave up");
    expect(wakers.size).toBe(0);
  });
});

describe("acquire waits", () => {
  it("gets the lock soon after the holder releases it, without polling hard", async () => {
    const prefix = uniquePrefix("wait");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("stock:9");
    const waiter = createLocks({ redis: upstash(), prefix });
    const requests = { n: 0 };
    const started = performance.now();
    const lease = await withFetch(counting(requests), async () => {
      setTimeout(() => void holder.release(), 500);
      return waiter.acquire("stock:9", { waitMs: 5_000 });
    });
    const waited = performance.now() - started;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    expect(waited).toBeGreaterThanOrEqual(450);
    // Soon: the release hands it over (or the next look finds it free), well before its 10 s TTL or
    // the 5 s waitMs; the bound leaves seconds for a busy machine.
    expect(waited).toBeLessThan(3_000);
    // At most one attempt per 50 ms, plus the holder's release request.
    expect(requests.n).toBeLessThanOrEqual(Math.ceil(waited / MIN_RETRY_MS) + 2);
    await lease.release();
  });

  it("throws LockTimeoutError after waitMs when the lock stays busy", async () => {
    const prefix = uniquePrefix("wait-timeout");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("stock:9");
    const started = performance.now();
    const error = await createLocks({ redis: upstash(), prefix })
      .acquire("stock:9", { waitMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: "LOCK_TIMEOUT", lockName: "stock:9", waitedMs: 300 });
    expect((error as LockTimeoutError).retryAfterMs).toBeGreaterThan(9_000);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    await holder.release();
  });

  it("stops waiting as soon as the caller's signal aborts", async () => {
    const prefix = uniquePrefix("wait-abort");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("stock:9");
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(new Error("client went away")), 150);
    await expect(
      createLocks({ redis: upstash(), prefix }).acquire("stock:9", { waitMs: 10_000, signal: controller.signal }),
    ).rejects.toThrow("client went away");
    expect(performance.now() - started).toBeLessThan(2_000);
    await holder.release();
  });

  // A holder on a 100 ms lease that heartbeats every 85 ms: its TTL is often under 50 ms when the
  // waiter looks, and a look timed to the TTL's end would find it extended, over and over.
  it.each(["poll", "push"] as const)("makes at most 20 attempts a second (%s) while a holder heartbeats late on a short lease", async (wake) => {
    const prefix = uniquePrefix(`wait-rate-${wake}`);
    const holderLocks = createLocks({ redis: upstash(), prefix, leaseMs: 100 });
    const { client, attempts } = await countingAcquires();
    const holder = await holderLocks.acquire("job");
    // Each heartbeat through a lease resumed afresh: the server, not the holder's own clock, decides.
    let holding = true;
    const beating = (async () => {
      for (let next = performance.now() + 85; holding; next += 85) {
        await sleep(Math.max(0, next - performance.now()));
        if (holding) await holderLocks.resume(holder).heartbeat().catch(() => (holding = false));
      }
    })();
    const started = performance.now();
    // Usually a LockTimeoutError after 3 s; a heartbeat late by 15 ms lets the waiter in sooner,
    // and the rate over the shorter wait counts the same.
    const outcome = await createLocks({ redis: client, prefix }).acquire("job", { waitMs: 3_000, wake }).catch((e: unknown) => e);
    const seconds = (performance.now() - started) / 1000;
    holding = false;
    await beating;
    await holder.release();
    if (!(outcome instanceof LockTimeoutError)) await (outcome as Lease).release();
    // +1: the first attempt follows no pause. Before, a poller's look timed to the TTL's end made
    // 71-72 in 3 s; a push waiter stayed under the bound even then, and is held to it here.
    expect(attempts.n).toBeLessThanOrEqual(Math.ceil(20 * seconds) + 1);
  });

  it("returns null from tryAcquire when busy, after a single request", async () => {
    const prefix = uniquePrefix("try");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("stock:9");
    const requests = { n: 0 };
    const other = createLocks({ redis: upstash(), prefix });
    expect(await withFetch(counting(requests), () => other.tryAcquire("stock:9"))).toBeNull();
    expect(requests.n).toBe(1);
    await holder.release();
    await sleep(0);
  });
});
