import { describe, expect, it } from "vitest";
import { createLocks, type Lease, type RedisClient } from "../../../src/index.ts";
import type { WakeSubscriber } from "../../../src/core/client.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { lockSet } from "../../support/lock-set.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe.each(["poll", "push"] as const)("waiting in line (%s)", (wake) => {
  it("hands the lock to waiters in the order they arrived", async () => {
    const prefix = uniquePrefix(`fifo-${wake}`);
    const holder = await lockSet(prefix).acquire("door");
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      waiters.push(
        lockSet(prefix).acquire("door", { waitMs: 15_000, wake }).then(async (lease: Lease) => {
          order.push(i);
          await sleep(30);
          await lease.release();
        }),
      );
      await until(async () => (await lockSet(prefix).inspect("door")).waiters === i + 1, 3_000);
    }
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
    expect((await lockSet(prefix).inspect("door")).waiters).toBe(0);
  });
});

describe("the queue", () => {
  it("keeps tryAcquire from jumping ahead of a waiter when the lock frees up", async () => {
    const prefix = uniquePrefix("no-barging");
    const holder = await lockSet(prefix).acquire("door");
    const waiting = lockSet(prefix).acquire("door", { waitMs: 10_000 });
    await until(async () => (await lockSet(prefix).inspect("door")).waiters === 1, 3_000);
    await holder.release();
    expect(await lockSet(prefix).tryAcquire("door")).toBeNull();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    await lease.release();
  });

  /** A held lock, and a waiter that queued for it once and is never heard from again. */
  async function ghostInLine(prefix: string) {
    const redis = upstash();
    const holder = await lockSet(prefix).acquire("door");
    const keys = lockKeys(prefix, "door");
    await redis.eval(scripts.acquire.text, [keys.lock, keys.fence, keys.queue, keys.alive], ["a".repeat(32), "ghost", "10000", "70000", "2000"]);
    return { redis, holder, keys };
  }

  it("drops a waiter that stopped asking (crashed) within a few seconds", async () => {
    const prefix = uniquePrefix("ghost");
    const { holder } = await ghostInLine(prefix);
    await holder.release();
    const started = performance.now();
    const lease = await lockSet(prefix).acquire("door", { waitMs: 10_000 });
    expect(performance.now() - started).toBeLessThan(5_000);
    await lease.release();
  });

  it("drops a waiter whose entry in alive was evicted, even while others keep the line busy", async () => {
    const prefix = uniquePrefix("ghost-evicted");
    const { redis, holder, keys } = await ghostInLine(prefix);
    // What a maxmemory policy may do: nothing then says when the ghost stopped asking.
    await redis.del(keys.alive);
    await holder.release();
    expect(await lockSet(prefix).inspect("door")).toMatchObject({ held: false, waiters: 1 });
    // Its own attempts renew the line's TTL: before the fix the ghost held the free lock back for good.
    const lease = await lockSet(prefix).acquire("door", { waitMs: 4_000 });
    expect((await lockSet(prefix).inspect("door")).waiters).toBe(0);
    await lease.release();
  });

  it("takes a waiter out of line at once when its wait is aborted", async () => {
    const prefix = uniquePrefix("leave");
    const holder = await lockSet(prefix).acquire("door");
    const controller = new AbortController();
    const waiting = lockSet(prefix).acquire("door", { waitMs: 10_000, signal: controller.signal });
    await until(async () => (await lockSet(prefix).inspect("door")).waiters === 1, 3_000);
    controller.abort(new Error("client went away"));
    await expect(waiting).rejects.toThrow("client went away");
    await until(async () => (await lockSet(prefix).inspect("door")).waiters === 0, 1_000);
    await holder.release();
  });

  it("takes a waiter out of line when its wait times out", async () => {
    const prefix = uniquePrefix("leave-timeout");
    const holder = await lockSet(prefix).acquire("door");
    await expect(lockSet(prefix).acquire("door", { waitMs: 300 })).rejects.toThrow(/stayed busy/);
    await until(async () => (await lockSet(prefix).inspect("door")).waiters === 0, 1_000);
    await holder.release();
  });

  // Workers ends what a request left running once the response is out (workerd-faults.test.ts).
  it("hands the request that takes it out of line to waitUntil, where the runtime needs one", async () => {
    const prefix = uniquePrefix("leave-wait-until");
    const holder = await lockSet(prefix).acquire("door");
    const handed: Promise<unknown>[] = [];
    const waitUntil = (work: Promise<unknown>) => void handed.push(work);
    await expect(lockSet(prefix).acquire("door", { waitMs: 300, waitUntil })).rejects.toThrow(/stayed busy/);
    expect(handed).toHaveLength(1);
    await Promise.all(handed);
    expect((await lockSet(prefix).inspect("door")).waiters).toBe(0);
    await expect(lockSet(prefix).acquire("door", { waitUntil: "ctx" as never })).rejects.toThrow(/waitUntil: expected a function/);
    await holder.release();
  });

  // Workers' ctx.waitUntil passed unbound throws "Illegal invocation" when called.
  it("answers its own error when waitUntil throws, and closes what it opened", async () => {
    const prefix = uniquePrefix("wait-until-throws");
    const holder = await lockSet(prefix).acquire("door");
    const real = upstash();
    const open = new Set<WakeSubscriber>();
    const client: RedisClient = {
      evalsha: (sha1, keys, args) => real.evalsha(sha1, keys, args),
      eval: (script, keys, args) => real.eval(script, keys, args),
      subscribe(channel) {
        const stream = real.subscribe(channel);
        open.add(stream);
        return { on: (type, listener) => stream.on(type, listener), unsubscribe: () => (open.delete(stream), stream.unsubscribe()) };
      },
    };
    const waitUntil = () => {
      throw new TypeError("Illegal invocation");
    };
    const waiting = createLocks({ redis: client, prefix }).acquire("door", { waitMs: 1_500, wake: "push", waitUntil });
    await expect(waiting).rejects.toThrow(/stayed busy/);
    await until(async () => open.size === 0, 5_000);
    await until(async () => (await lockSet(prefix).inspect("door")).waiters === 0, 3_000);
    await holder.release();
  });
});
