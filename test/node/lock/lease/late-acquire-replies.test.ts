// A lease is trusted here for less than its TTL, counted from before its request went out: a
// reply that comes back too late to be useful is not handed out: the next attempt extends it, or
// the call gives it back as it ends.
import { describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError } from "../../../../src/index.ts";
import { driftMs } from "../../../../src/core/backend.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { delayingResponses, withFetch } from "../../../support/fetch-wrappers.ts";
import { lockSet } from "../../../support/lock-set.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

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
    // Given back as the call ends, without making it wait.
    await until(async () => !(await locks.inspect("job")).held, 5_000);
  });

  it("says a free lock behind slow replies needs a longer lease, not more waiting", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late-wait"), leaseMs: 400 });
    await (await locks.acquire("warm")).release(); // scripts loaded: one request per attempt
    const error = await withFetch(delayingResponses(380), () => locks.acquire("job", { waitMs: 1_000 }).catch((e: unknown) => e));
    // Every attempt took the lock and gave it back; LockTimeoutError would say "stayed busy, raise waitMs".
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toBe("Redis took most of leaseMs to answer; raise leaseMs.");
    await until(async () => !(await locks.inspect("job")).held, 5_000);
    expect(await locks.inspect("job")).toMatchObject({ held: false, waiters: 0 });
  });

  it("counts a reentrant hold whose reply came too late once, when the next attempt rejoins it", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("late-join"), leaseMs: 10_000, timeoutMs: 12_000 });
    const outer = await locks.acquire("job");
    // The join's reply takes 9.2 of its 10 s: the next attempt (the lock still has about 800 ms to
    // live) finds the hold under its ticket and extends it, without counting another.
    const inner = await withFetch(delayingResponses(9_200, 1), () => locks.acquire("job", { owner: outer.owner, waitMs: 15_000 }));
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 2 });
    expect(await inner.release()).toBe("released");
    // The outer hold is still there: the inner lease never stood for it.
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 1 });
    expect(await outer.release()).toBe("released");
  });

  it("keeps a hold whose reply came too late for the next attempt, which rejoins it: no give-back can undo that lease", async () => {
    const prefix = uniquePrefix("late-dup");
    const locks = createLocks({ redis: upstash(), prefix, leaseMs: 10_000, timeoutMs: 12_000 });
    await (await locks.acquire("warm")).release(); // scripts loaded: one request per attempt
    const acquireSha1 = scriptSha1(scripts.acquire);
    // leave.lua goes as EVAL, its text JSON-escaped in the body as @upstash/redis sends it.
    const leaveText = JSON.stringify(scripts.leave.text).slice(1, -1);
    let slowFence: number | undefined;
    const duplicates: Promise<unknown>[] = [];
    const lease = await withFetch(
      (real) => async (input, init) => {
        const body = String(init?.body);
        // The first attempt lands at once, but its reply takes 9.2 s of the 10 s lease.
        if (body.includes(acquireSha1) && slowFence === undefined) {
          const response = await real(input, init);
          slowFence = ((await response.clone().json()) as [{ result: number[] }])[0].result[1];
          return delayed(response, 9_200);
        }
        // A proxy sends any give-back again 300 ms later, after the next attempt has landed.
        if (body.includes(leaveText)) duplicates.push(sleep(300).then(() => real(input, init)));
        return real(input, init);
      },
      () => locks.acquire("job", { waitMs: 15_000 }),
    );
    await Promise.all(duplicates);
    // The hold the slow reply stood for, extended: the same fence, counted once.
    expect(lease.fence).toBe(slowFence);
    // Before, the duplicate give-back deleted the hold this lease stands for, and anyone could take it.
    expect(await locks.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lockSet(prefix).tryAcquire("job")).toBeNull();
    expect(await lease.release()).toBe("released");
  });
});
