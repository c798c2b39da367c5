// Calls on one lease that overlap: a heartbeat still out when the lease ends here, and the timer
// behind the lease's signal across many heartbeats.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLocks, LockLostError, type RedisClient } from "../../../../src/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** The real client, with every heartbeat's reply held back 400 ms once Redis has run it. */
async function slowHeartbeats(): Promise<RedisClient> {
  const real = upstash();
  await real.scriptLoad(scripts.heartbeat.text); // the one request a heartbeat makes is the delayed EVALSHA
  const heartbeatSha1 = scriptSha1(scripts.heartbeat);
  return {
    evalsha: async (sha, keys, args) => {
      const reply = await real.evalsha(sha, keys, args);
      if (sha === heartbeatSha1) await sleep(400);
      return reply;
    },
    eval: (text, keys, args) => real.eval(text, keys, args),
  };
}

describe("a heartbeat still out when its lease ends here", () => {
  // The lease is over from release() on (remainingMs() 0, signal aborted): whatever the network
  // did to the heartbeat, it answers as the signal does, not "check the Redis URL, token and network".
  it("rejects with the signal's LockLostError though its own request timed out", async () => {
    const locks = createLocks({ redis: await slowHeartbeats(), prefix: uniquePrefix("hb-out-release"), timeoutMs: 200 });
    const lease = await locks.acquire("job");
    const heartbeat = lease.heartbeat().catch((error: unknown) => error);
    expect(await lease.release()).toBe("released");
    expect(await heartbeat).toBeInstanceOf(LockLostError);
    expect(await heartbeat).toBe(lease.signal.reason);
    expect((await locks.inspect("job")).held).toBe(false);
  });

  it("rejects with LockLostError when the lease lapsed here while the request timed out", async () => {
    // Sent at once: the lease lapses here within 200 ms, its request times out at 300, and the
    // reply (held back 400 ms) never counts.
    const locks = createLocks({ redis: await slowHeartbeats(), prefix: uniquePrefix("hb-out-lapse"), leaseMs: 200, timeoutMs: 300 });
    const lease = await locks.acquire("job");
    expect(lease.remainingMs()).toBeGreaterThan(0); // sent while valid: not refused before any request
    const outcome = await lease.heartbeat().catch((error: unknown) => error);
    expect(lease.remainingMs()).toBe(0);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect((outcome as Error).message).toMatch(/lapsed before a heartbeat extended it/);
    await lease.release();
  });

  it("still rejects with LockUnavailableError while the lease is valid here", async () => {
    const locks = createLocks({ redis: await slowHeartbeats(), prefix: uniquePrefix("hb-out-valid"), timeoutMs: 200 });
    const lease = await locks.acquire("job");
    await expect(lease.heartbeat()).rejects.toMatchObject({ code: "LOCK_UNAVAILABLE" });
    expect(lease.remainingMs()).toBeGreaterThan(9_000);
    expect(await lease.release()).toBe("released");
  });
});

describe("the timer behind a lease's signal", () => {
  afterEach(() => void vi.restoreAllMocks());

  /** Counts the AbortSignal.timeout timers made from now on that have not fired yet. */
  /** The lease's timers (the only ones set for over 10 s here) not yet cleared. */
  function pendingLeaseTimers(): () => number {
    const set = vi.spyOn(globalThis, "setTimeout");
    const clear = vi.spyOn(globalThis, "clearTimeout");
    return () => set.mock.results.filter((result, i) => result.type === "return" && Number(set.mock.calls[i]?.[1]) > 10_000 &&
      !clear.mock.calls.some(([timer]) => timer === result.value)).length;
  }

  // Each heartbeat armed a new timeout for the whole lease and none could be cleared: a lease
  // heartbeating every second under a one-hour leaseMs kept 3,600 of them (and itself) alive.
  it("keeps one timer however often the lease heartbeats, and clears it on release", async () => {
    const pending = pendingLeaseTimers();
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("one-timer"), leaseMs: 60_000 });
    const lease = await locks.acquire("job");
    const { signal } = lease; // watched, as a fetch made under the lease would
    for (let i = 0; i < 10; i++) await lease.heartbeat();
    expect(pending()).toBe(1);
    await lease.release();
    expect(signal.aborted).toBe(true);
    expect(pending()).toBe(0);
  });

  it("still aborts the signal when a heartbeated lease lapses, and not before", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("timer-lapse"), leaseMs: 300 });
    const lease = await locks.acquire("job");
    const { signal } = lease;
    for (let i = 0; i < 3; i++) {
      await sleep(150);
      await lease.heartbeat();
    }
    const deadline = performance.now() + lease.remainingMs();
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    expect(lease.remainingMs()).toBe(0);
    expect(performance.now() - deadline).toBeGreaterThanOrEqual(-1);
    expect(performance.now() - deadline).toBeLessThan(1_000); // a timer may come late on a busy machine
    expect(signal.reason.message).toMatch(/lapsed before a heartbeat extended it/);
    await lease.release();
  });

  it("starts the timer of a resumed lease's signal, read before any heartbeat, at its first one", async () => {
    const prefix = uniquePrefix("timer-resumed");
    const first = await createLocks({ redis: upstash(), prefix, leaseMs: 300 }).acquire("job");
    const resumed = createLocks({ redis: upstash(), prefix, leaseMs: 300 }).resume(first);
    const { signal } = resumed; // no deadline yet: nothing to time
    await resumed.heartbeat();
    await resumed.heartbeat();
    await vi.waitFor(() => expect(signal.aborted).toBe(true), { timeout: 3_000 }); // 300 ms, a busy machine's timer allowed for
    expect(resumed.remainingMs()).toBe(0);
    expect(signal.reason.message).toMatch(/lapsed before a heartbeat extended it/);
  });
});
