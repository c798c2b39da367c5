// A handover message names its fence and a digest of that fence with the heir's owner token,
// which only the heir and the lock's own keys know: a client that may publish, but not read the
// lock's keys, cannot hand a waiter a lock it does not hold.
import { Redis as Ioredis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { lockKeys } from "../../../support/lock-keys.ts";
import { until } from "../../../support/until.ts";
import { lockSet } from "../../../support/lock-set.ts";
import { observedRedis } from "../../../support/observed-redis.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

const direct = new Ioredis(inject("upstash").redisUrl);
afterAll(() => void direct.disconnect());

describe("a forged handover", () => {
  it("does not hand a push waiter the lock: it waits for the real release", async () => {
    const prefix = uniquePrefix("forged");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, heard } = observedRedis();
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 20_000, wake: "push" });
    // PUBSUB CHANNELS shows the lock set's channel to anyone who may run it; suppose the forger
    // also learned the waiter's ticket.
    let ticket = "";
    await until(async () => {
      ticket = (await direct.zrange(lockKeys(prefix, "gate").queue, 0, 0))[0]?.split(".")[0] ?? "";
      return ticket !== "" && heard.confirmations > 0;
    }, 10_000);
    const channel = heard.channels[0];
    const forged = (Date.now() + 60_000) * 1_000;
    for (const message of [`${ticket}:${forged}`, `${ticket}:${forged}:${"0".repeat(40)}`]) {
      expect(await upstash().publish(String(channel), message)).toBeGreaterThan(0);
    }
    // Still waiting: a lease with the forged fence would outrank every honest holder at a store.
    const early = await Promise.race([waiting.then((lease) => lease.fence), new Promise((resolve) => setTimeout(resolve, 1_500, "waiting"))]);
    expect(early).toBe("waiting");
    await holder.release();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    expect(lease.fence).toBeLessThan(forged);
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: true, fence: lease.fence });
    await lease.release();
  });
});
