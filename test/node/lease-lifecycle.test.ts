import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, type RedisClient } from "../../src/index.ts";
import { scriptSha1 } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { sleep } from "../../src/wait.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/** The real client; heartbeat replies come `hold.ms` after Redis ran the script (a slow network back). */
async function slowHeartbeats(hold: { ms: number }): Promise<RedisClient> {
  const real = upstash();
  const heartbeatSha1 = await scriptSha1(scripts.heartbeat);
  return {
    evalsha: async (sha, keys, args) => {
      const reply = await real.evalsha(sha, keys, args);
      if (sha === heartbeatSha1) await sleep(hold.ms);
      return reply;
    },
    eval: (text, keys, args) => real.eval(text, keys, args),
  };
}

describe("a resumed lease's first heartbeat", () => {
  // README: `await resumed.heartbeat(); // …and confirm it is still held`. A resumed lease has no
  // deadline yet (validUntil undefined), so Lease.heartbeat's "lapsed here while the heartbeat was
  // on its way" check (#throwIfLost) passes whatever the reply's delay, and the new deadline,
  // sentAt + ttl - drift, is set although it has already passed: the heartbeat resolves, confirming a
  // lease that Redis has let go and another client may hold. An acquired lease in the same spot
  // gets LockLostError, and acquire() never hands out a lease whose reply came that late.
  it("fails with LockLostError when its reply arrives after the extension it reports has run out", async () => {
    const prefix = uniquePrefix("resume-late");
    // 1 s left on the server when the heartbeat lands (it never shortens a TTL), whatever this machine's speed.
    const first = await createLocks({ redis: upstash(), prefix, leaseMs: 1_000 }).acquire("job");
    const hold = { ms: 0 };
    const resumer = createLocks({ redis: await slowHeartbeats(hold), prefix, leaseMs: 300 });
    await resumer.resume({ name: "warm", owner: first.owner, fence: first.fence }).heartbeat().catch(() => undefined); // script loaded

    const resumed = resumer.resume({ name: first.name, owner: first.owner, fence: first.fence });
    hold.ms = 1_400; // Redis confirms it at once (about 1 s left); the reply comes 1.4 s later
    const outcome = await resumed.heartbeat().then(() => "confirmed", (error: unknown) => error);

    // By the time the heartbeat answered, the lock was free for anyone: it was not "confirmed".
    const other = await createLocks({ redis: upstash(), prefix }).tryAcquire("job");
    expect(other).not.toBeNull();
    expect(outcome).toBeInstanceOf(LockLostError);
    await other?.release();
  });
});

describe("a lock held across many reentrant joins", () => {
  // Every join leaves a `q:<requestId>` field in the lock hash (acquire.lua's HSETNX, kept for
  // retries of that request) and every release of one of several holds leaves a `q:<releaseId>`
  // (release.lua's HSET); nothing removes them until the last hold goes. A long-lived lock kept by
  // heartbeats, with a join and release per job, grows by two fields per job for as long as it is
  // held, and its final DEL is O(fields) on Redis' single thread. The markers are only needed for
  // the retry window (60 s).
  it("keeps the lock's hash bounded, not two fields more per join and release", async () => {
    const prefix = uniquePrefix("join-growth");
    const locks = createLocks({ redis: upstash(), prefix });
    const outer = await locks.acquire("leader");
    for (let i = 0; i < 50; i++) {
      const job = await locks.acquire("leader", { owner: outer.owner });
      expect(await job.release()).toBe("released");
    }
    expect(await locks.inspect("leader")).toMatchObject({ held: true, holds: 1 });
    const fields = await upstash().hlen(`${prefix}:{leader}:lock`);
    // owner, fence, holds and the outer acquire's own marker; allow a few more.
    expect(fields).toBeLessThanOrEqual(10);
    expect(await outer.release()).toBe("released");
  });
});
