// A push wait when the stream lets it down (confirmed late, messages lost, never confirmed, no
// subscribe at all) or no message will come: it still gets the lock, soon after it is free.
import { describe, expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../../../src/index.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { heldLock, lockSet } from "../../../support/lock-set.ts";
import { observedRedis } from "../../../support/observed-redis.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** A push wait of up to 8 s for "gate" through `client`, and how long it took. */
async function pushWaitForGate(client: RedisClient, prefix: string) {
  const started = performance.now();
  const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
  return { lease, waited: performance.now() - started };
}

describe("push wake-ups", () => {
  it("catches a release that happens before the subscription is confirmed", async () => {
    const prefix = uniquePrefix("push-early");
    const holder = await heldLock(prefix);
    const { client } = observedRedis({ confirmAfterMs: 400 });
    setTimeout(() => void holder.release(), 150);
    const { lease, waited } = await pushWaitForGate(client, prefix);
    // Not the holder's 10 s TTL: the attempt right after confirmation found the lock free.
    expect(waited).toBeLessThan(3_000);
    await lease.release();
  });

  it("falls back to the holder's TTL when the message is lost: one more look, not a poll", async () => {
    const prefix = uniquePrefix("push-lost");
    const holder = await heldLock(prefix, 1_000);
    const { client, heard } = observedRedis({ dropMessages: true });
    let attempts = 0;
    const counting: RedisClient = { ...client, evalsha: (sha, keys, args) => (attempts++, client.evalsha(sha, keys, args)) };
    const waiting = pushWaitForGate(counting, prefix);
    // In line, listening: the release hands it the lock, and the message is lost.
    await until(async () => heard.confirmations > 0 && (await lockSet(prefix).inspect("gate")).waiters === 1, 10_000);
    const before = attempts;
    await holder.release();
    const { lease } = await waiting;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    // It slept on the hinted TTL and looked once (polling would look every 50 ms).
    expect(attempts - before).toBeLessThanOrEqual(2);
    await lease.release();
  });

  it("keeps looking at least every second while its stream never confirms", async () => {
    const prefix = uniquePrefix("push-unconfirmed");
    const holder = await heldLock(prefix);
    const { client } = observedRedis({ neverConfirm: true });
    setTimeout(() => void holder.release(), 300);
    const { lease, waited } = await pushWaitForGate(client, prefix);
    // Not the whole waitMs: the release handed it the lock, and its next look found it.
    expect(waited).toBeLessThan(3_000);
    await lease.release();
  });

  // A proxy that buffers event streams never lets the confirmation through: the waiter must not
  // wait on that stream for good, silently polling.
  it("gives up on a stream that has not confirmed within 5 s, closing it, tries another, and the lock set says so once", async () => {
    const prefix = uniquePrefix("push-stuck");
    const holder = await heldLock(prefix);
    const { client, seen } = observedRedis({ neverConfirm: true });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      // Released once the second stream (a second after the first gave up) is on its way.
      setTimeout(() => void holder.release(), 10_000);
      const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 20_000 });
      expect(lease.fence).toBeGreaterThan(holder.fence);
      await lease.release();
      expect(warn.mock.calls).toEqual([[expect.stringMatching(/no confirmation within 5 s; a proxy that buffers event streams\?/)]]);
      expect(seen.subscribed).toBe(2);
      // Both closed: the first when it gave up, the second once the wait left it idle.
      await until(async () => seen.unsubscribed === 2, 5_000);
    } finally {
      warn.mockRestore();
    }
  });

  it("polls with backoff, not at once, when the client cannot subscribe, and the lock set says so once", async () => {
    const prefix = uniquePrefix("push-nostream");
    const holder = await heldLock(prefix);
    const real = upstash();
    const sentAt: number[] = [];
    // A client of its own with the two calls fencelock needs, and no SUBSCRIBE.
    const client: RedisClient = {
      evalsha: (sha, keys, args) => (sentAt.push(performance.now()), real.evalsha(sha, keys, args)),
      eval: (script, keys, args) => real.eval(script, keys, args),
    };
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const locks = createLocks({ redis: client, prefix });
      setTimeout(() => void holder.release(), 500);
      await (await locks.acquire("gate", { waitMs: 8_000 })).release();
      expect((sentAt[1] ?? 0) - (sentAt[0] ?? 0)).toBeGreaterThanOrEqual(40); // the shortest backoff is 50 ms
      const again = await heldLock(prefix);
      setTimeout(() => void again.release(), 200);
      await (await locks.acquire("gate", { waitMs: 8_000 })).release();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]?.[0])).toContain('no subscribe(); waits poll. Pass wake: "poll"');
    } finally {
      warn.mockRestore();
    }
  });

  it("opens a new stream when the lock set's stream fails mid-wait, and looks again, so no release is missed", async () => {
    const prefix = uniquePrefix("push-died");
    const holder = await heldLock(prefix);
    const real = upstash();
    const streams: { fail: () => void }[] = [];
    let attempts = 0;
    const client: RedisClient = {
      evalsha: (sha, keys, args) => (attempts++, real.evalsha(sha, keys, args)),
      eval: (script, keys, args) => real.eval(script, keys, args),
      subscribe(channel) {
        const subscriber = real.subscribe(channel);
        const onError: ((event: unknown) => void)[] = [];
        // As a dropped connection ends it: the stream goes, and its listeners hear an error.
        streams.push({ fail: () => void subscriber.unsubscribe().then(() => onError.forEach((listener) => listener(new Error("connection reset")))) });
        return { on: (type, listener) => (type === "error" ? onError.push(listener) : subscriber.on(type, listener)), unsubscribe: () => subscriber.unsubscribe() };
      },
    };
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000 });
    await until(async () => streams.length === 1 && attempts === 2, 5_000); // listening, and looked once more
    streams[0]?.fail();
    // A look at once, a new stream, and a look once it confirmed.
    await until(async () => streams.length === 2 && attempts === 4, 5_000);
    await holder.release();
    const lease = await waiting;
    // Handed over through the new stream: no look of its own found it.
    expect(attempts).toBe(4);
    expect(lease.fence).toBeGreaterThan(holder.fence);
    await lease.release();
  });

  it("tries a stream again a second after one failed to open, not a minute, and is then handed the lock by push", async () => {
    const prefix = uniquePrefix("push-reopen");
    const holder = await heldLock(prefix);
    const real = upstash();
    // Nothing listens there: the first stream fails, as one opened while the network blips or a failover runs.
    const unreachable = upstash({ url: "http://127.0.0.1:9", retry: false });
    const streams = { opened: 0, confirmed: 0 };
    let attempts = 0;
    const client: RedisClient = {
      evalsha: (sha, keys, args) => (attempts++, real.evalsha(sha, keys, args)),
      eval: (script, keys, args) => real.eval(script, keys, args),
      subscribe(channel) {
        const subscriber = (streams.opened++ === 0 ? unreachable : real).subscribe(channel);
        subscriber.on("subscribe", () => streams.confirmed++);
        return subscriber;
      },
    };
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 30_000 });
      // Polling meanwhile; the look it takes once the new stream is live comes next.
      await until(async () => streams.confirmed === 1, 15_000);
      const looked = attempts;
      await until(async () => attempts > looked, 5_000);
      const before = attempts;
      await holder.release();
      const lease = await waiting;
      // Handed over by a message: no look of its own found the lock free.
      expect(attempts).toBe(before);
      expect(lease.fence).toBeGreaterThan(holder.fence);
      await lease.release();
      expect(streams.opened).toBe(2);
      expect(warn.mock.calls).toEqual([[expect.stringMatching(/SUBSCRIBE stream for push wake-ups failed .*tried again after 1 s/)]]);
    } finally {
      warn.mockRestore();
    }
  });

  it("gets a lock that expires without a release", async () => {
    const prefix = uniquePrefix("push-expiry");
    await heldLock(prefix, 600);
    const { client } = observedRedis();
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 5_000, wake: "push" });
    expect(lease.fence).toBeGreaterThan(0);
    await lease.release();
  });

  it("looks again within 50 ms, not after a second, when a hold it took came too late to use", async () => {
    const prefix = uniquePrefix("push-late");
    await heldLock(prefix, 600); // expires without a release: no message will come
    const real = upstash();
    const acquireSha1 = scriptSha1(scripts.acquire);
    const attempts: number[] = [];
    let slowReplyAt = 0;
    const client: RedisClient = {
      async evalsha(sha, keys, args) {
        if (sha === acquireSha1) attempts.push(performance.now());
        const reply = await real.evalsha(sha, keys, args);
        // The first attempt to find the lock free gets its reply after 380 of its 400 ms: too late.
        if (sha === acquireSha1 && Array.isArray(reply) && reply[0] === 1 && !slowReplyAt) {
          await sleep(380);
          slowReplyAt = performance.now();
        }
        return reply;
      },
      eval: (script, keys, args) => real.eval(script, keys, args),
      subscribe: (channel) => real.subscribe(channel),
    };
    const lease = await createLocks({ redis: client, prefix, leaseMs: 400 }).acquire("gate", { waitMs: 5_000, wake: "push" });
    await lease.release();
    const next = attempts.find((at) => at > slowReplyAt);
    expect(slowReplyAt && next).toBeGreaterThan(0);
    // The lock is this call's: waiting for a message (a second) would be waiting for nothing.
    expect((next ?? 0) - slowReplyAt).toBeLessThan(500);
  });
});
