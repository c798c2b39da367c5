import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, LockUnavailableError, type RedisClient } from "../../src/index.ts";
import { driftMs } from "../../src/lease.ts";
import { scriptSha1 } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { sleep } from "../../src/wait.ts";
import { delayingResponses, withFetch } from "../support/fetch-wrappers.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

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

  it("never lets a heartbeat cut short the TTL another hold of the same lock still trusts", async () => {
    const prefix = uniquePrefix("hb-shorter");
    const locks = createLocks({ redis: upstash(), prefix });
    const outer = await locks.acquire("job", { leaseMs: 10_000 });
    const inner = await locks.acquire("job", { owner: outer.owner, leaseMs: 200 });
    await inner.heartbeat();
    await inner.release();
    // A resumed lease heartbeats with the lock set's leaseMs, which may be shorter too.
    await createLocks({ redis: upstash(), prefix, leaseMs: 200 }).resume(outer).heartbeat();
    await sleep(400);
    expect(outer.remainingMs()).toBeGreaterThan(9_000);
    expect(await createLocks({ redis: upstash(), prefix }).tryAcquire("job")).toBeNull();
    expect(await outer.release()).toBe("released");
  });

  // Found by chaos exploration (a join with a shorter leaseMs than the lock's TTL, heartbeats over a
  // slow network). The heartbeat finds the TTL longer than the join's leaseMs, so it does not
  // extend and answers the TTL as it stands; counted from the heartbeat's sentAt, that TTL ends
  // sooner than the deadline the lease already had (the request leg comes off it), and once the
  // reply is in, before now: LockLostError, for a lease still valid here and still held in Redis.
  it("never fails a heartbeat of a lease that is still valid here and still held", async () => {
    const prefix = uniquePrefix("hb-shortens-local");
    const real = upstash();
    await real.scriptLoad(scripts.heartbeat.text); // the one request made is the delayed EVALSHA
    const heartbeatSha1 = await scriptSha1(scripts.heartbeat);
    const slowHeartbeatRequests: RedisClient = {
      evalsha: async (sha, keys, args) => {
        if (sha === heartbeatSha1) await sleep(350); // on its way to Redis
        return await real.evalsha(sha, keys, args);
      },
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const locks = createLocks({ redis: slowHeartbeatRequests, prefix, leaseMs: 1_000 });
    const outer = await locks.acquire("job");
    const inner = await locks.acquire("job", { owner: outer.owner, leaseMs: 100 }); // trusts the lock's ~1 s TTL
    await sleep(inner.remainingMs() - 500);
    const deadline = performance.now() + inner.remainingMs();
    // The heartbeat lands ~350 ms later, finds ~160 ms of TTL (>= 100: not extended) and answers it.
    const outcome = await inner.heartbeat().then(() => "ok", (error: unknown) => error);
    const leftBefore = deadline - performance.now();
    const held = await createLocks({ redis: upstash(), prefix }).inspect("job");
    expect(leftBefore).toBeGreaterThan(0); // the deadline it had before the heartbeat has not come
    expect(held.held).toBe(true); // nor has the lock's TTL: nobody else can take it
    expect(outcome).toBe("ok"); // fails: LockLostError "it lapsed before a heartbeat extended it"
    expect(inner.remainingMs()).toBeGreaterThan(0);
    await inner.release();
    await outer.release();
  });

  // The server extends the lease, but the reply takes longer than the 60 ms left here.
  async function slowHeartbeatLocks(label: string) {
    const real = upstash();
    const heartbeatSha1 = await scriptSha1(scripts.heartbeat);
    const slowHeartbeats: RedisClient = {
      evalsha: async (sha, keys, args) => {
        const reply = await real.evalsha(sha, keys, args);
        if (sha === heartbeatSha1) await sleep(150);
        return reply as never;
      },
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const locks = createLocks({ redis: slowHeartbeats, prefix: uniquePrefix(label), leaseMs: 300 });
    await (await locks.acquire("warm")).heartbeat(); // heartbeat script loaded
    return locks;
  }

  it("fails a heartbeat during which the lease lapsed here, as its aborted signal already says", async () => {
    const lease = await (await slowHeartbeatLocks("hb-late")).acquire("job");
    const { signal } = lease;
    await sleep(lease.remainingMs() - 60);
    const outcome = await lease.heartbeat().catch((error: unknown) => error);
    expect(signal.aborted).toBe(true);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect(lease.remainingMs()).toBe(0);
    await lease.release();
  });

  it("fails a heartbeat during which the lease lapsed here, even when its signal was never read", async () => {
    const lease = await (await slowHeartbeatLocks("hb-late-nosignal")).acquire("job");
    await sleep(lease.remainingMs() - 60);
    const heartbeat = lease.heartbeat().catch((error: unknown) => error);
    await sleep(100);
    expect(lease.remainingMs()).toBe(0); // lapsed here while the heartbeat was on its way
    expect(await heartbeat).toBeInstanceOf(LockLostError);
    expect(lease.remainingMs()).toBe(0);
    await lease.release();
  });

  it("aborts the signal when the lease lapses without a heartbeat", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("signal"), leaseMs: 200 });
    const lease = await locks.acquire("job");
    expect(lease.signal.aborted).toBe(false);
    const aborted = new Promise((resolve) => lease.signal.addEventListener("abort", resolve));
    await aborted;
    expect(lease.remainingMs()).toBe(0);
    expect(lease.signal.reason).toBeInstanceOf(LockLostError);
    expect(lease.signal.reason.message).toMatch(/lapsed before a heartbeat extended it/);
  });

  it("keeps the signal live across heartbeats", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("signal-hb"), leaseMs: 300 });
    const lease = await locks.acquire("job");
    const { signal } = lease; // taken early, as a fetch under the lease would
    for (let i = 0; i < 4; i++) {
      await sleep(150);
      await lease.heartbeat();
    }
    expect(signal.aborted).toBe(false);
    await lease.release();
    expect(signal.aborted).toBe(true);
    expect(signal.reason.message).toMatch(/released/);
    await expect(lease.heartbeat()).rejects.toBe(signal.reason);
  });

  it("treats a resumed lease as unconfirmed until a heartbeat reaches the server", async () => {
    const prefix = uniquePrefix("resume");
    const first = await createLocks({ redis: upstash(), prefix }).acquire("job");
    const locks = createLocks({ redis: upstash(), prefix });
    const resumed = locks.resume({ name: first.name, owner: first.owner, fence: first.fence });
    expect(resumed.remainingMs()).toBe(0);
    expect(resumed.signal.aborted).toBe(false);
    await resumed.heartbeat();
    expect(resumed.remainingMs()).toBeGreaterThan(9_000);
    expect(resumed.fence).toBe(first.fence);
    expect(await resumed.release()).toBe("released");
  });

  // A resumed lease has no deadline of its own to lapse from while the heartbeat is out.
  it("fails a resumed lease's heartbeat whose reply came after the extension it reports ran out", async () => {
    const prefix = uniquePrefix("resume-late");
    const first = await createLocks({ redis: upstash(), prefix, leaseMs: 1_000 }).acquire("job");
    const heartbeatSha1 = await scriptSha1(scripts.heartbeat);
    const real = upstash();
    await real.scriptLoad(scripts.heartbeat.text); // so that the one request made is the delayed EVALSHA
    // Redis confirms it at once (about 1 s left: a heartbeat never shortens a TTL); the reply comes 1.4 s later.
    const slowHeartbeats: RedisClient = {
      evalsha: async (sha, keys, args) => {
        const reply = await real.evalsha(sha, keys, args);
        if (sha === heartbeatSha1) await sleep(1_400);
        return reply;
      },
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const resumed = createLocks({ redis: slowHeartbeats, prefix, leaseMs: 300 }).resume(first);
    await expect(resumed.heartbeat()).rejects.toThrow(LockLostError);
    expect(resumed.remainingMs()).toBe(0);
    // Rightly so: by then the lock was free for anyone.
    const other = await createLocks({ redis: upstash(), prefix }).tryAcquire("job");
    expect(other).not.toBeNull();
    await other?.release();
  });

  it("resumes the same hold: a reentrant join needs its own release, a resumed copy does not", async () => {
    const prefix = uniquePrefix("resume-holds");
    const locks = createLocks({ redis: upstash(), prefix });
    const first = await locks.acquire("job");
    const joined = await locks.acquire("job", { owner: first.owner });
    const resumed = locks.resume({ name: first.name, owner: first.owner, fence: first.fence });
    expect(await locks.inspect("job")).toMatchObject({ held: true, holds: 2 });
    // Releasing the resumed copy gives back first's hold; releasing first too gives back joined's.
    expect(await resumed.release()).toBe("released");
    expect(await first.release()).toBe("released");
    expect(await locks.inspect("job")).toMatchObject({ held: false, holds: 0 });
    await expect(joined.heartbeat()).rejects.toBeInstanceOf(LockLostError);
  });

  it("keeps the owner token out of logs", async () => {
    const lease = await createLocks({ redis: upstash(), prefix: uniquePrefix("log") }).acquire("job");
    expect(JSON.stringify(lease)).not.toContain(lease.owner);
    expect(Object.keys(lease)).not.toContain("owner");
    await lease.release();
  });
});

/** The real client, whose replies are held back `hold.ms` once Redis has run the script (a slow network back). */
function slowReplies(hold: { ms: number }): RedisClient {
  const real = upstash();
  const late = async <T>(reply: Promise<T>) => {
    const value = await reply;
    await sleep(hold.ms);
    return value;
  };
  return {
    evalsha: (sha, keys, args) => late(real.evalsha(sha, keys, args)),
    eval: (script, keys, args) => late(real.eval(script, keys, args)),
  };
}

describe("a lease whose release was called", () => {
  it("is no longer valid once the lock has passed to another owner", async () => {
    const prefix = uniquePrefix("release-in-flight");
    const hold = { ms: 0 };
    const holder = createLocks({ redis: slowReplies(hold), prefix, leaseMs: 5_000 });
    const other = createLocks({ redis: upstash(), prefix, leaseMs: 5_000 });

    const lease = await holder.acquire("x");
    const signal = lease.signal;
    hold.ms = 500; // the release's reply is slow; Redis runs it at once
    const releasing = lease.release();
    // Redis has released it: another owner takes the lock.
    await until(async () => !(await other.inspect("x")).held, 400);
    const next = await other.tryAcquire("x");
    expect(next).not.toBeNull();
    expect(next!.remainingMs()).toBeGreaterThan(0);

    // Not valid here any more (its signal aborted), though the release's reply has not come.
    expect({ remainingMs: lease.remainingMs(), aborted: signal.aborted }).toEqual({ remainingMs: 0, aborted: true });

    expect(await releasing).toBe("released");
    await next!.release();
  });

  it("is no longer valid after a release that timed out although Redis ran it", async () => {
    const prefix = uniquePrefix("release-timed-out");
    const hold = { ms: 0 };
    const holder = createLocks({ redis: slowReplies(hold), prefix, leaseMs: 5_000, timeoutMs: 100 });
    const other = createLocks({ redis: upstash(), prefix, leaseMs: 5_000 });

    const lease = await holder.acquire("x");
    hold.ms = 300; // past timeoutMs: the release is applied, its reply comes too late
    await expect(lease.release()).rejects.toMatchObject({ code: "LOCK_UNAVAILABLE" });
    const next = await other.tryAcquire("x");
    expect(next).not.toBeNull();

    // The holder cannot know whether its release landed: its lease is over either way.
    expect({ remainingMs: lease.remainingMs(), aborted: lease.signal.aborted }).toEqual({ remainingMs: 0, aborted: true });
    await next!.release();
  });
});
