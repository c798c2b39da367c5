// A fence is never minted more than 1 s ahead of the clock of the Redis that mints it. When the
// last fence of a name is further ahead (a failover to a server whose clock lags, a clock stepped
// back), minting waits for the clock: otherwise a later failover that loses this fence could mint
// it again for someone else.
import { describe, expect, it } from "vitest";
import { ClockBehindError, LockTimeoutError, LockUnavailableError } from "../../../src/index.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { lockSet } from "../../support/lock-set.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

/** Leaves a fence record `aheadMs` ahead of the server's clock, as a fast clock before a failover would. */
async function lastFenceAhead(prefix: string, name: string, aheadMs: number): Promise<number> {
  const last = (Date.now() + aheadMs) * 1_000;
  const { fence } = lockKeys(prefix, name);
  await upstash().hset(fence, { last: String(last) });
  await upstash().pexpire(fence, 20 * 60_000);
  return last;
}

describe("fences ahead of the server's clock", () => {
  it("are not minted past 1 s ahead: tryAcquire throws a retryable ClockBehindError and changes nothing", async () => {
    const prefix = uniquePrefix("clock");
    const last = await lastFenceAhead(prefix, "job", 10 * 60_000);
    const error = await lockSet(prefix).tryAcquire("job").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClockBehindError);
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).toMatchObject({ name: "ClockBehindError", code: "CLOCK_BEHIND", lockName: "job" });
    // 10 minutes ahead, less the 1 s a fence may lead its clock.
    expect((error as ClockBehindError).retryAfterMs).toBeGreaterThan(9 * 60_000);
    expect((error as ClockBehindError).retryAfterMs).toBeLessThanOrEqual(10 * 60_000);
    // The wait, not the lag: the clock is 1 s further behind than it says.
    expect((error as Error).message).toMatch(/clock is behind its last fence; retry in \d+ ms\.$/);
    expect(await lockSet(prefix).inspect("job")).toMatchObject({ held: false, fence: last });
  });

  it("make acquire() wait, and say why when its waitMs runs out", async () => {
    const prefix = uniquePrefix("clock-wait");
    await lastFenceAhead(prefix, "job", 10 * 60_000);
    const error = await lockSet(prefix).acquire("job", { waitMs: 300 }).catch((e: unknown) => e);
    // Not LockTimeoutError: nobody holds the lock, and more waitMs would not help.
    expect(error).toBeInstanceOf(ClockBehindError);
    await until(async () => (await lockSet(prefix).inspect("job")).waiters === 0, 5_000);
  });

  it("let acquire() take the lock once the clock has caught up, with a fence above the last", async () => {
    const prefix = uniquePrefix("clock-catch-up");
    const last = await lastFenceAhead(prefix, "job", 2_000);
    const lease = await lockSet(prefix).acquire("job", { waitMs: 20_000 });
    expect(lease.fence).toBeGreaterThan(last);
    // Never more than 1 s (and a little for the request) ahead of the clock it was minted by.
    expect(lease.fence).toBeLessThan((Date.now() + 1_100) * 1_000);
    await lease.release();
  });

  it("within 1 s of the clock, are minted at once, above the last", async () => {
    const prefix = uniquePrefix("clock-near");
    const last = await lastFenceAhead(prefix, "job", 400);
    const lease = await lockSet(prefix).tryAcquire("job");
    expect(lease?.fence).toBeGreaterThan(last);
    await lease?.release();
  });

  it("are not minted by a release handing the lock to a push waiter either", async () => {
    const prefix = uniquePrefix("clock-handover");
    const holder = await lockSet(prefix).acquire("job");
    const waiting = lockSet(prefix).acquire("job", { waitMs: 30_000, wake: "push" });
    await until(async () => (await lockSet(prefix).inspect("job")).waiters === 1, 10_000);
    const last = await lastFenceAhead(prefix, "job", 3_000);
    await holder.release();
    // No handover: the release left the lock free and minted nothing.
    expect(await lockSet(prefix).inspect("job")).toMatchObject({ held: false, fence: last });
    // The waiter takes it once the clock has caught up, with a fence above the last.
    expect((await waiting).fence).toBeGreaterThan(last);
  });

  it("are told to every caller in line, not only the first", async () => {
    const prefix = uniquePrefix("clock-line");
    await lastFenceAhead(prefix, "job", 10 * 60_000);
    const first = new AbortController();
    const waiting = lockSet(prefix).acquire("job", { waitMs: 60_000, signal: first.signal }).catch((e: unknown) => e);
    await until(async () => (await lockSet(prefix).inspect("job")).waiters === 1, 10_000);
    // Before, the second in line heard "promised to an earlier waiter": null here, 423 in a guard.
    expect(await lockSet(prefix).tryAcquire("job").catch((e: unknown) => e)).toBeInstanceOf(ClockBehindError);
    first.abort();
    await waiting;
  });

  it("are not what a held lock without a TTL (PERSIST, restored data) reads as: that is busy", async () => {
    const prefix = uniquePrefix("clock-no-ttl");
    const holder = await lockSet(prefix).acquire("job");
    await upstash().persist(lockKeys(prefix, "job").lock);
    expect(await lockSet(prefix).tryAcquire("job")).toBeNull();
    expect(await lockSet(prefix).acquire("job", { waitMs: 300 }).catch((e: unknown) => e)).toBeInstanceOf(LockTimeoutError);
    await holder.release();
  });
});
