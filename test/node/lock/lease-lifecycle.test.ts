// A lease from taking to letting go: one holder at a time, expiry, heartbeats, and release.
import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, type Lease, type RedisClient } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { lockSet } from "../../support/lock-set.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("mutual exclusion", () => {
  it("gives a busy lock to exactly one of many concurrent callers, round after round", async () => {
    const prefix = uniquePrefix("mutex");
    const contenders = Array.from({ length: 16 }, () => lockSet(prefix));
    let lastFence = 0;
    for (let round = 0; round < 25; round++) {
      const leases = await Promise.all(contenders.map((locks) => locks.tryAcquire("seat:1")));
      const winners = leases.filter((l): l is Lease => l !== null);
      expect(winners).toHaveLength(1);
      const [winner] = winners as [Lease];
      expect(winner.fence).toBeGreaterThan(lastFence);
      lastFence = winner.fence;
      expect(await winner.release()).toBe("released");
    }
  });
});

describe("expiry", () => {
  it("lets an unrenewed lease lapse, and the next holder gets a higher fence", async () => {
    const prefix = uniquePrefix("expiry");
    const first = await lockSet(prefix, 200).acquire("job");
    await sleep(400);
    expect(first.remainingMs()).toBe(0);
    expect(first.signal.aborted).toBe(true);
    expect(first.signal.reason).toBeInstanceOf(LockLostError);

    const second = await lockSet(prefix, 200).acquire("job", { waitMs: 0 });
    expect(second.fence).toBeGreaterThan(first.fence);
    await expect(first.heartbeat()).rejects.toBeInstanceOf(LockLostError);
    expect(await first.release()).toBe("expired");
    expect((await lockSet(prefix).inspect("job")).held).toBe(true);
  });
});

describe("heartbeat", () => {
  it("keeps a lease past its original length", async () => {
    const prefix = uniquePrefix("hb");
    const lease = await lockSet(prefix, 600).acquire("report");
    for (let i = 0; i < 4; i++) {
      await sleep(250);
      await lease.heartbeat();
    }
    // 1 s after acquire, well past the 600 ms lease, it is still ours.
    expect(lease.remainingMs()).toBeGreaterThan(300);
    expect(await lockSet(prefix).tryAcquire("report")).toBeNull();
    expect(await lease.release()).toBe("released");
  });

  it("never revives a lease that expired on the server", async () => {
    const prefix = uniquePrefix("hb-revive");
    const locks = lockSet(prefix, 150);
    const lease = await locks.acquire("report");
    await sleep(300);
    // resume() skips the local check, so the request reaches the script.
    const resumed = locks.resume({ name: lease.name, owner: lease.owner, fence: lease.fence });
    await expect(resumed.heartbeat()).rejects.toThrow(/no longer held/);
    expect((await locks.inspect("report")).held).toBe(false);
  });

  it("refuses a non-owner and a forged fence, and leaves the holder in place", async () => {
    const prefix = uniquePrefix("hb-owner");
    const locks = lockSet(prefix);
    const lease = await locks.acquire("account:7");
    const stranger = locks.resume({ name: "account:7", owner: "0".repeat(32), fence: lease.fence });
    const forged = locks.resume({ name: "account:7", owner: lease.owner, fence: lease.fence + 1 });
    await expect(stranger.heartbeat()).rejects.toBeInstanceOf(LockLostError);
    await expect(forged.heartbeat()).rejects.toBeInstanceOf(LockLostError);
    expect(await stranger.release()).toBe("expired");
    expect(await forged.release()).toBe("expired");
    expect(await locks.inspect("account:7")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    await lease.heartbeat();
    expect(await lease.release()).toBe("released");
  });
});

describe("release", () => {
  it("reports released once held, the same on a second call, and frees the lock", async () => {
    const locks = lockSet(uniquePrefix("release"));
    const lease = await locks.acquire("cache:rebuild");
    expect(await lease.release()).toBe("released");
    expect(await lease.release()).toBe("released");
    expect(lease.signal.aborted).toBe(true);
    await expect(lease.heartbeat()).rejects.toBeInstanceOf(LockLostError);
    expect((await locks.inspect("cache:rebuild")).held).toBe(false);
  });

  it("releases through Symbol.asyncDispose", async () => {
    const locks = lockSet(uniquePrefix("dispose"));
    {
      await using lease = await locks.acquire("migration");
      expect((await locks.inspect("migration")).held).toBe(true);
      expect(lease.fence).toBeGreaterThan(0);
    }
    expect((await locks.inspect("migration")).held).toBe(false);
  });

  it("keeps the block's own error when the release on dispose fails, as withLock keeps fn's", async () => {
    const inner = upstash();
    let down = false;
    const flaky: RedisClient = {
      evalsha: (sha, keys, args) => (down ? Promise.reject(new Error("fetch failed")) : inner.evalsha(sha, keys, args)),
      eval: (script, keys, args) => (down ? Promise.reject(new Error("fetch failed")) : inner.eval(script, keys, args)),
    };
    const locks = createLocks({ redis: flaky, prefix: uniquePrefix("dispose-down") });
    const declined = new Error("card declined");
    const caught = await (async () => {
      await using lease = await locks.acquire("charge");
      expect(lease.fence).toBeGreaterThan(0);
      down = true;
      throw declined;
    })().catch((e: unknown) => e);
    expect(caught).toBe(declined);
  });
});
