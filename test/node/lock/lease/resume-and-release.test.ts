// A resumed lease (unconfirmed until a heartbeat), and a lease once its release was called.
import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, type RedisClient } from "../../../../src/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("validity on the client", () => {
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
    const heartbeatSha1 = scriptSha1(scripts.heartbeat);
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
