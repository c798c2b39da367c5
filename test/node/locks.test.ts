import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, LockUnavailableError, type Lease, type Locks, type RedisClient } from "../../src/index.ts";
import { sleep } from "../../src/wait.ts";
import { delayingResponses, droppingResponses, withFetch } from "../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/** Each call is a separate client, as separate isolates or servers would have. */
function lockSet(prefix: string, leaseMs = 10_000) {
  return createLocks({ redis: upstash(), prefix, leaseMs });
}

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

describe("reentrancy", () => {
  it("joins the same owner's lease with the same fence and counts holds", async () => {
    const prefix = uniquePrefix("reentrant");
    const locks = lockSet(prefix);
    const outer = await locks.acquire("order:42");
    const inner = await locks.acquire("order:42", { owner: outer.owner, waitMs: 0 });
    expect(inner.fence).toBe(outer.fence);
    expect(await locks.inspect("order:42")).toMatchObject({ held: true, holds: 2 });
    expect(await lockSet(prefix).tryAcquire("order:42")).toBeNull();

    expect(await inner.release()).toBe("released");
    expect(await locks.inspect("order:42")).toMatchObject({ held: true, holds: 1 });
    expect(await outer.release()).toBe("released");
    expect((await locks.inspect("order:42")).held).toBe(false);
  });

  // Each join and each release of one of several holds leaves a mark inside the lock, kept while
  // it is held: a release called again after a failure, however late, must find its own.
  it("gives back no second hold when a release whose reply was lost is called again after other releases", async () => {
    const prefix = uniquePrefix("rerelease");
    // One attempt per request, so that the lost reply fails the call.
    const locks = createLocks({ redis: upstash({ retry: { retries: 0 } }), prefix, leaseMs: 60_000 });
    await (await locks.acquire("warm")).release(); // scripts loaded: each release is one request
    const a = await locks.acquire("job");
    const b = await locks.acquire("job", { owner: a.owner });
    const c = await locks.acquire("job", { owner: a.owner });
    await expect(withFetch(droppingResponses(1), () => a.release())).rejects.toThrow(LockUnavailableError);
    expect(await b.release()).toBe("released");
    expect(await a.release()).toBe("released"); // again, as the docs allow
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 1 });
    expect(await lockSet(prefix).tryAcquire("job")).toBeNull(); // c still holds it
    expect(await c.release()).toBe("released");
  });
});

describe("inspect", () => {
  it("shows state without the owner, and the last fence once free", async () => {
    const locks = lockSet(uniquePrefix("inspect"));
    expect(await locks.inspect("never-used")).toEqual({ held: false, fence: null, remainingMs: 0, holds: 0, waiters: 0 });
    const lease = await locks.acquire("door");
    const state = await locks.inspect("door");
    expect(state).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(state.remainingMs).toBeGreaterThan(9_000);
    expect(JSON.stringify(state)).not.toContain(lease.owner);
    await lease.release();
    expect(await locks.inspect("door")).toMatchObject({ held: false, fence: lease.fence });
  });
});

describe("withLock", () => {
  it("returns fn's value and releases", async () => {
    const locks = lockSet(uniquePrefix("with"));
    const value = await locks.withLock("ticket", async (lease) => {
      expect((await locks.inspect("ticket")).held).toBe(true);
      return lease.fence;
    });
    expect(value).toBeGreaterThan(0);
    expect((await locks.inspect("ticket")).held).toBe(false);
  });

  it("refuses a missing function before taking the lock, so no fence is minted for nothing", async () => {
    const locks = lockSet(uniquePrefix("with-nofn"));
    await expect(locks.withLock("ticket", undefined as never)).rejects.toThrow(/expected a function/);
    expect((await locks.inspect("ticket")).fence).toBeNull();
  });

  it("rethrows fn's own error and still releases", async () => {
    const locks = lockSet(uniquePrefix("with-throw"));
    const boom = new Error("card declined");
    await expect(locks.withLock("ticket", () => Promise.reject(boom))).rejects.toBe(boom);
    expect((await locks.inspect("ticket")).held).toBe(false);
  });

  // An error here would invite a retry of work that has happened; fn sees the loss in lease.signal.
  it("resolves with fn's result even if the lease lapsed while fn ran, which fn could see", async () => {
    const prefix = uniquePrefix("with-lapsed");
    const locks = lockSet(prefix, 200);
    const result = await locks.withLock("ticket", async (lease) => {
      await sleep(300);
      const next = await lockSet(prefix).tryAcquire("ticket");
      await next?.release();
      return { lost: lease.signal.aborted, overtaken: next !== null };
    });
    expect(result).toEqual({ lost: true, overtaken: true });
  });
});

describe("hostile and unusual names", () => {
  it("keeps names with braces, escapes and unicode apart, each a lock of its own", async () => {
    const locks = lockSet(uniquePrefix("names"));
    const names = ["{", "}", "%7B", "}{order}{", "注文:42 🎟", "a:{b}:lock", "x".repeat(512), " "];
    const leases = await Promise.all(names.map((name) => locks.tryAcquire(name)));
    expect(leases.every((lease) => lease !== null)).toBe(true);
    for (const name of names) expect(await locks.inspect(name)).toMatchObject({ held: true, holds: 1 });
    await Promise.all(leases.map((lease) => lease?.release()));
    for (const name of names) expect((await locks.inspect(name)).held).toBe(false);
  });
});

describe("an aborted call", () => {
  // The only attempt's reply arrives 600 ms later: past waitMs, and after the abort.
  it.each([
    [
      "acquire, when it aborts during the last attempt (not LockTimeoutError)",
      (locks: Locks, signal: AbortSignal) => locks.acquire("job", { waitMs: 200, signal }),
    ],
    [
      "tryAcquire, when it aborts while the attempt finds the lock busy (not null)",
      (locks: Locks, signal: AbortSignal) => locks.tryAcquire("job", { signal }),
    ],
  ])("rejects %s with the signal's reason", async (_, call) => {
    const prefix = uniquePrefix("abort-last");
    const holder = await lockSet(prefix).acquire("job");
    const locks = lockSet(prefix);
    await (await locks.tryAcquire("warm"))?.release(); // scripts loaded
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 100);
    const outcome = await withFetch(delayingResponses(600, 1), () => call(locks, controller.signal).catch((error: unknown) => error));
    expect(controller.signal.aborted).toBe(true);
    expect(outcome).toBe(controller.signal.reason);
    await holder.release();
  });
});

describe("an aborted call while Redis is too slow to answer", () => {
  it("rejects with the signal's reason, not with LockUnavailableError from the attempt that was out", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("abort-slow"), timeoutMs: 500 });
    await (await locks.tryAcquire("warm"))?.release(); // scripts loaded
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 100);
    // Redis answers after 2 s: the attempt out at the abort then fails by timeoutMs.
    const outcome = await withFetch(delayingResponses(2_000), () =>
      locks.acquire("job", { waitMs: 5_000, signal: controller.signal }).catch((error: unknown) => error));
    expect(controller.signal.aborted).toBe(true);
    expect(outcome).toBe(controller.signal.reason);
  });
});
