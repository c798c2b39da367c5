import { describe, expect, it } from "vitest";
import { createLocks, LockTimeoutError } from "../../src/index.ts";
import { MIN_RETRY_MS, QUEUE_ALIVE_MS, retryDelayMs, sleep } from "../../src/wait.ts";
import { counting, withFetch } from "../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

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

  it("lets the waiter next in line look every 50 ms, and no faster; the second every 100 ms", () => {
    expect(retryDelayMs(30, busy(10_000, 0), 10_000, () => 0.999_999)).toBeCloseTo(MIN_RETRY_MS, 0);
    expect(retryDelayMs(30, busy(10_000, 0), 10_000, () => 0)).toBe(MIN_RETRY_MS);
    expect(retryDelayMs(30, busy(10_000, 1), 10_000, () => 0.999_999)).toBeCloseTo(100, 0);
  });

  it("never sleeps past the holder's remaining TTL or the caller's budget", () => {
    expect(retryDelayMs(3, busy(20), 10_000)).toBe(21);
    expect(retryDelayMs(3, busy(10_000), 70)).toBe(70);
    expect(retryDelayMs(3, busy(10_000), 0)).toBe(0);
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
