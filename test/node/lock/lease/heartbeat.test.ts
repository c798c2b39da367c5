// Heartbeats over slow replies and shorter leases, and the lease's signal across them.
import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, type RedisClient } from "../../../../src/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("validity on the client", () => {
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
    // Cut short, it would have lapsed by now; a loaded machine may take seconds over the requests above.
    expect(outer.remainingMs()).toBeGreaterThan(5_000);
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
    const heartbeatSha1 = scriptSha1(scripts.heartbeat);
    const slowHeartbeatRequests: RedisClient = {
      evalsha: async (sha, keys, args) => {
        if (sha === heartbeatSha1) await sleep(1_000); // on its way to Redis
        return await real.evalsha(sha, keys, args);
      },
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const locks = createLocks({ redis: slowHeartbeatRequests, prefix, leaseMs: 3_000 });
    const outer = await locks.acquire("job");
    const inner = await locks.acquire("job", { owner: outer.owner, leaseMs: 100 }); // trusts the lock's ~3 s TTL
    await sleep(inner.remainingMs() - 1_600);
    const deadline = performance.now() + inner.remainingMs();
    // The heartbeat lands ~1 s later, finds ~600 ms of TTL (>= 100: not extended) and answers it:
    // counted from when it was sent, that ends before the reply is in. The old deadline is ~600 ms off.
    const outcome = await inner.heartbeat().then(() => "ok", (error: unknown) => error);
    const leftBefore = deadline - performance.now();
    const held = await createLocks({ redis: upstash(), prefix }).inspect("job");
    expect(leftBefore).toBeGreaterThan(0); // the deadline it had before the heartbeat has not come
    expect(held.held).toBe(true); // nor has the lock's TTL: nobody else can take it
    expect(outcome).toBe("ok"); // was LockLostError "it lapsed before a heartbeat extended it"
    expect(inner.remainingMs()).toBeGreaterThan(0);
    await inner.release();
    await outer.release();
  });

  // The server extends the lease, but the reply takes longer than the 60 ms left here.
  async function slowHeartbeatLocks(label: string) {
    const real = upstash();
    const heartbeatSha1 = scriptSha1(scripts.heartbeat);
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
    // 450 ms of slack a beat for a busy machine; five beats outlast one lease.
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("signal-hb"), leaseMs: 600 });
    const lease = await locks.acquire("job");
    const { signal } = lease; // taken early, as a fetch under the lease would
    for (let i = 0; i < 5; i++) {
      await sleep(150);
      await lease.heartbeat();
    }
    expect(signal.aborted).toBe(false);
    await lease.release();
    expect(signal.aborted).toBe(true);
    expect(signal.reason.message).toMatch(/released/);
    await expect(lease.heartbeat()).rejects.toBe(signal.reason);
  });
});
