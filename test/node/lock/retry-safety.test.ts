import { describe, expect, it } from "vitest";
import { createLocks } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { droppingResponses, sendingTwice, withFetch } from "../../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

// Every operation must leave the same state whether its HTTP request ran once or twice.
describe.each([
  ["a request sent twice", () => sendingTwice],
  ["a response lost after Redis applied it", () => droppingResponses(1)],
])("retry safety: %s", (_, freshWrapper) => {
  const setup = () => {
    const prefix = uniquePrefix("retry");
    return { locks: createLocks({ redis: upstash(), prefix }), observer: createLocks({ redis: upstash(), prefix }) };
  };
  const twice = <T>(fn: () => Promise<T>) => withFetch(freshWrapper(), fn);

  it("acquire mints one fence and one hold", async () => {
    const { locks, observer } = setup();
    const lease = await twice(() => locks.acquire("invoice:1"));
    expect(await observer.inspect("invoice:1")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lease.release()).toBe("released");
    expect((await observer.inspect("invoice:1")).held).toBe(false);
  });

  it("a reentrant acquire counts one hold", async () => {
    const { locks, observer } = setup();
    const outer = await locks.acquire("invoice:2");
    const inner = await twice(() => locks.acquire("invoice:2", { owner: outer.owner }));
    expect(inner.fence).toBe(outer.fence);
    expect(await observer.inspect("invoice:2")).toMatchObject({ holds: 2 });
    await inner.release();
    await outer.release();
    expect((await observer.inspect("invoice:2")).held).toBe(false);
  });

  it("release gives back one hold and reports released, not expired", async () => {
    const { locks, observer } = setup();
    const outer = await locks.acquire("invoice:3");
    const inner = await locks.acquire("invoice:3", { owner: outer.owner });
    expect(await twice(() => inner.release())).toBe("released");
    expect(await observer.inspect("invoice:3")).toMatchObject({ held: true, holds: 1 });
    expect(await twice(() => outer.release())).toBe("released");
    expect((await observer.inspect("invoice:3")).held).toBe(false);
  });

  it("heartbeat extends once and keeps the lease", async () => {
    const { locks, observer } = setup();
    const lease = await locks.acquire("invoice:4");
    await twice(() => lease.heartbeat());
    expect(await observer.inspect("invoice:4")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    await lease.release();
  });
});

describe("retry safety: a release retried after the lock moved on", () => {
  // A's release is applied and its reply lost; before the client's retry goes out, the lock
  // passes to the next holder, who releases it too. Only the request carrying A's owner is touched.
  const nextHolderBetween = (owner: string, nextHolderDone: () => Promise<unknown>, moves: { n: number }) =>
    (real: typeof fetch): typeof fetch => async (input, init) => {
      const response = await real(input, init);
      if (moves.n > 0 || !String(init?.body).includes(owner)) return response;
      moves.n++;
      await response.text();
      await nextHolderDone();
      throw new TypeError("fetch failed: connection reset after the request was sent");
    };

  it("reports released when another client took and released the lock before the retry", async () => {
    const prefix = uniquePrefix("retry-moved-on");
    const [locks, other] = [createLocks({ redis: upstash(), prefix }), createLocks({ redis: upstash(), prefix })];
    const a = await locks.acquire("door");
    const moves = { n: 0 };
    const takeAndRelease = async () => (await other.acquire("door", { waitMs: 0 })).release();
    expect(await withFetch(nextHolderBetween(a.owner, takeAndRelease, moves), () => a.release())).toBe("released");
    expect(moves.n).toBe(1);
  });

  it("reports released when the release handed the lock to a push waiter who released it before the retry", async () => {
    const prefix = uniquePrefix("retry-handed-on");
    const [locks, other] = [createLocks({ redis: upstash(), prefix }), createLocks({ redis: upstash(), prefix })];
    const a = await locks.acquire("door");
    const heir = other.acquire("door", { waitMs: 10_000, wake: "push" });
    while ((await other.inspect("door")).waiters === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const moves = { n: 0 };
    const heirReleases = async () => (await heir).release();
    expect(await withFetch(nextHolderBetween(a.owner, heirReleases, moves), () => a.release())).toBe("released");
    expect(moves.n).toBe(1);
    expect((await other.inspect("door")).held).toBe(false);
  });

  // Its mark went with the lock: a lapse here, or leave.lua giving back the last hold (a join that
  // timed out), as a chaos run found.
  it("reports released when it gave back one of two holds and the lock then went before the retry", async () => {
    const prefix = uniquePrefix("retry-lock-gone");
    const locks = createLocks({ redis: upstash(), prefix, leaseMs: 300 });
    const a = await locks.acquire("door");
    await locks.acquire("door", { owner: a.owner }); // a second hold, never released
    const moves = { n: 0 };
    const lockLapses = () => sleep(600);
    expect(await withFetch(nextHolderBetween(a.owner, lockLapses, moves), () => a.release())).toBe("released");
    expect(moves.n).toBe(1);
    expect((await locks.inspect("door")).held).toBe(false);
  });

  it("reports released when it gave back one of three holds, another hold was given back, and the lock went before the retry", async () => {
    const prefix = uniquePrefix("retry-two-marks");
    const locks = createLocks({ redis: upstash(), prefix, leaseMs: 1_000 });
    const a = await locks.acquire("door");
    const b = await locks.acquire("door", { owner: a.owner });
    await locks.acquire("door", { owner: a.owner }); // a third hold, never released
    const moves = { n: 0 };
    // b's release used to overwrite the record a's retry looks for.
    const otherReleaseThenLapse = async () => (expect(await b.release()).toBe("released"), await sleep(1_600));
    expect(await withFetch(nextHolderBetween(a.owner, otherReleaseThenLapse, moves), () => a.release())).toBe("released");
    expect(moves.n).toBe(1);
    expect((await locks.inspect("door")).held).toBe(false);
  });
});
