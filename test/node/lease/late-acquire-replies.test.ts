// A lease is trusted here for less than its TTL, counted from before its request went out: a
// reply that comes back too late to be useful is given back, not handed out.
import { describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError } from "../../../src/index.ts";
import { driftMs } from "../../../src/lease.ts";
import { scriptSha1 } from "../../../src/redis.ts";
import * as scripts from "../../../src/scripts.gen.ts";
import { sleep } from "../../../src/wait.ts";
import { delayingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

const delayed = async (response: Response, ms: number) => (await sleep(ms), response);

describe("validity on the client", () => {
  it("trusts a lease for less than its TTL, counted from before the request was sent", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("validity"), leaseMs: 2_000 });
    const lease = await withFetch(delayingResponses(300), () => locks.acquire("job"));
    // 300 ms in transit and 22 ms of drift allowance come off the 2 s lease.
    expect(lease.remainingMs()).toBeLessThanOrEqual(2_000 - 300 - driftMs(2_000));
    expect(lease.remainingMs()).toBeGreaterThan(1_000);
    await lease.release();
  });

  it("never hands out a lease whose reply arrived too late to be useful, and gives it back", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late"), leaseMs: 400 });
    const error = await withFetch(delayingResponses(380), () => locks.tryAcquire("job").catch((e: unknown) => e));
    // Not null: the lock was free, and "busy" would send the caller to wait for a holder that is not there.
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toBe("Redis took most of leaseMs to answer; raise leaseMs.");
    expect((await locks.inspect("job")).held).toBe(false);
  });

  it("says a free lock behind slow replies needs a longer lease, not more waiting", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late-wait"), leaseMs: 400 });
    await (await locks.acquire("warm")).release(); // scripts loaded: one request per attempt
    const error = await withFetch(delayingResponses(380), () => locks.acquire("job", { waitMs: 1_000 }).catch((e: unknown) => e));
    // Every attempt took the lock and gave it back; LockTimeoutError would say "stayed busy, raise waitMs".
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toBe("Redis took most of leaseMs to answer; raise leaseMs.");
    expect(await locks.inspect("job")).toMatchObject({ held: false, waiters: 0 });
  });

  it("gives back a reentrant hold whose reply came too late, so the retry counts it again", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late-join"), leaseMs: 2_000 });
    const outer = await locks.acquire("job");
    // The join's reply takes 1.85 of its 2 s: it is given back, and the next attempt (the lock
    // still has about 150 ms to live) joins anew.
    const inner = await withFetch(delayingResponses(1_850, 1), () => locks.acquire("job", { owner: outer.owner, waitMs: 5_000 }));
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 2 });
    expect(await inner.release()).toBe("released");
    // The outer hold is still there: the inner lease never stood for it.
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 1 });
    expect(await outer.release()).toBe("released");
  });

  it("fails the acquire when a too-late hold cannot be given back, so a late give-back finds no lease to undo", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late-leave"), leaseMs: 1_000, timeoutMs: 1_200 });
    await (await locks.acquire("warm")).release(); // scripts loaded
    const [acquireSha1, leaveSha1] = await Promise.all([scriptSha1(scripts.acquire), scriptSha1(scripts.leave)]);
    let slowReplies = 0;
    let droppedLeaves = 0;
    const outcome = await withFetch(
      (real) => async (input, init) => {
        const body = String(init?.body);
        // The first attempt lands at once, but its reply takes 950 ms of the 1 s lease.
        if (body.includes(acquireSha1) && slowReplies++ === 0) return delayed(await real(input, init), 950);
        // The give-back's first four tries fail; the client's fifth goes out after timeoutMs.
        if (body.includes(leaveSha1) && droppedLeaves++ < 4) throw new TypeError("fetch failed: connection reset");
        return real(input, init);
      },
      () => locks.acquire("job", { waitMs: 5_000 }).catch((error: unknown) => error),
    );
    // Before, the next attempt took the lock again under the same ticket and returned a lease,
    // which the give-back's late fifth try then took away from under it.
    expect(outcome).toBeInstanceOf(LockUnavailableError);
  });
});
