// A push waiter whose handover message is late or never comes: its next attempt takes the lock
// handed to it, unless that handover lapsed; an aborted wait gives it back.
import { describe, expect, it } from "vitest";
import { createLocks, type RedisClient } from "../../../../src/index.ts";
import { lockKeys } from "../../../support/lock-keys.ts";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { countingAcquires } from "../../../support/counting-client.ts";
import { lockSet } from "../../../support/lock-set.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** A push waiter's client that counts its acquire attempts and holds its messages back until told. */
async function lateMessages() {
  const real = upstash();
  const { client: counted, attempts } = await countingAcquires(real);
  const heldBack: (() => void)[] = [];
  const client: RedisClient = {
    ...counted,
    subscribe(channel): WakeSubscriber {
      const subscriber = real.subscribe(channel);
      return {
        on: (type, listener) => subscriber.on(type, type === "message" ? (event) => heldBack.push(() => listener(event)) : listener),
        unsubscribe: () => subscriber.unsubscribe(),
      };
    },
  };
  return { client, attempts, heldBack };
}

describe("release hands the lock to the push waiter first in line", () => {
  it("gives a waiter that missed the message the same lease on its next attempt", async () => {
    const prefix = uniquePrefix("grant-lost");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages(); // its messages never arrive
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    await until(async () => heldBack.length === 1, 3_000);
    const handed = await lockSet(prefix).inspect("gate");
    const lease = await waiting; // its next attempt, within a second
    expect(attempts.n).toBe(3);
    // The same fence and one hold: the attempt found the lock already taken for it.
    expect(lease.fence).toBe(handed.fence);
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lease.release()).toBe("released");
    expect((await lockSet(prefix).inspect("gate")).held).toBe(false);
  });

  // The handover's hold lasts the waiter's leaseMs: it must look again before that, however short.
  it("with a lease under a second, still finds the handover on its next attempt, ahead of a later waiter", async () => {
    const prefix = uniquePrefix("grant-lost-short");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages(); // its messages never arrive
    const order: string[] = [];
    const first = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push", leaseMs: 300 })
      .then((lease) => (order.push("first"), lease.release()));
    await until(async () => attempts.n === 2, 3_000);
    const second = lockSet(prefix).acquire("gate", { waitMs: 8_000, wake: "poll" }).then((lease) => (order.push("second"), lease.release()));
    await until(async () => (await lockSet(prefix).inspect("gate")).waiters === 2, 3_000);
    await holder.release();
    await until(async () => heldBack.length === 1, 3_000);
    await Promise.all([first, second]);
    expect(order).toEqual(["first", "second"]);
  });

  it("never takes a handover that lapsed before its last attempt, however late the message", async () => {
    const prefix = uniquePrefix("grant-late");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages();
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 15_000, wake: "push" });
    await until(async () => attempts.n === 2, 3_000); // the attempt after the stream confirmed
    await holder.release(); // handed to the waiter; the message is held back
    await until(async () => heldBack.length === 1, 3_000);
    // The handover lapses (as if the waiter's isolate froze) and someone else takes the lock.
    await upstash().del(lockKeys(prefix, "gate").lock);
    const other = await lockSet(prefix).acquire("gate");
    await until(async () => attempts.n === 3, 3_000); // the waiter looks again: busy
    heldBack.splice(0).forEach((deliver) => deliver());
    expect(await Promise.race([waiting.then(() => "took it"), sleep(300).then(() => "still waiting")])).toBe("still waiting");

    await other.release();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(other.fence);
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: true, fence: lease.fence });
    await lease.release();
  });

  it("gives back a handover its waiter never saw when the wait is aborted", async () => {
    const prefix = uniquePrefix("grant-abort");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages();
    const controller = new AbortController();
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 15_000, wake: "push", signal: controller.signal });
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    await until(async () => heldBack.length === 1, 3_000);
    expect((await lockSet(prefix).inspect("gate")).held).toBe(true); // handed over, unseen
    controller.abort(new Error("client went away"));
    await expect(waiting).rejects.toThrow("client went away");
    // At once, not when the 10 s lease would have lapsed.
    await until(async () => !(await lockSet(prefix).inspect("gate")).held, 2_000);
    expect(await lockSet(prefix).tryAcquire("gate")).not.toBeNull();
  });
});
