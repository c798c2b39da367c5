// Joining an owner's lease, inspect, withLock, and names that look like key syntax.
import { describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { droppingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { lockSet } from "../../support/lock-set.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

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
