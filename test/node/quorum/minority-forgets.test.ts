// Quorum mode when nodes forget (restart empty): a holder's fence reaches every node that answers,
// so the next holder's fence is higher even when its majority is made of forgetful and other nodes.
// The first holder's client clock runs an hour ahead, so only the nodes' memory, not time, orders fences.
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../support/lock-keys.ts";
import { withFetch } from "../../support/fetch-wrappers.ts";
import { nodesPerTest, type QuorumNodes } from "../../support/quorum/nodes.ts";
import { slowNode } from "../../support/quorum/replaying-fetch.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();
const HOUR_MS = 3_600_000;

/** Runs `fn` as a client whose wall clock (Date.now(), which proposes fences) reads an hour ahead. */
async function asClientHourAhead<T>(fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now;
  Date.now = () => realNow() + HOUR_MS;
  try {
    return await fn();
  } finally {
    Date.now = realNow;
  }
}

/** Waits until every node remembers `fence` (or higher) as its last. */
async function everyNodeCarries(rig: QuorumNodes, prefix: string, name: string, fence: number) {
  await until(async () => (await Promise.all(rig.nodes.map((_, i) => rig.lastFence(i, prefix, name)))).every((f) => f >= fence), 5_000);
}

describe.each([3, 5])("on %i nodes", (count) => {
  const minority = Math.floor((count - 1) / 2);
  // The nodes that forget, and as many others that are away when the next holder comes: together
  // they leave a majority with only one node that kept its memory.
  const forget = Array.from({ length: minority }, (_, i) => i);
  const away = Array.from({ length: minority }, (_, i) => minority + i);

  it("after a holder every node answered, a minority forgets and the next fence is still higher", async () => {
    const rig = await nodes(count);
    const prefix = uniquePrefix("forget");
    const locks = rig.locks(prefix);
    const first = await asClientHourAhead(() => locks.acquire("vault"));
    expect(await first.release()).toBe("released");
    await everyNodeCarries(rig, prefix, "vault", first.fence);
    for (const i of forget) await rig.restartEmpty(i);
    for (const i of away) rig.stop(i);
    const next = await locks.acquire("vault");
    expect(next.fence).toBeGreaterThan(first.fence);
    await next.release();
  });

  // The last node did not grant the first holder: busy with a hold of its own, or too slow for the
  // vote. It is told the holder's fence all the same.
  describe.each([
    ["busy", async (rig: QuorumNodes, prefix: string, take: () => Promise<unknown>) => {
      const lock = lockKeys(prefix, "vault").lock;
      await rig.redis(count - 1).admin.hset(lock, "owner", "f".repeat(32), "fence", "1", "holds", "1");
      await rig.redis(count - 1).admin.pexpire(lock, 10_000);
      await take();
      await rig.redis(count - 1).admin.del(lock); // its own holder is done
    }],
    ["slow to answer", async (rig: QuorumNodes, _prefix: string, take: () => Promise<unknown>) => {
      await withFetch(slowNode(rig.node(count - 1).server.url, 300), take);
    }],
  ] as const)("when the last node was %s for the holder", (_, around) => {
    it("it carries the holder's fence too, and serves as the one that kept its memory", async () => {
      const rig = await nodes(count);
      const prefix = uniquePrefix("spread");
      const locks = rig.locks(prefix);
      let fence = 0;
      await around(rig, prefix, async () => {
        const first = await asClientHourAhead(() => locks.acquire("vault"));
        fence = first.fence;
        expect(await first.release()).toBe("released");
        await everyNodeCarries(rig, prefix, "vault", fence);
      });
      for (const i of forget) await rig.restartEmpty(i);
      // Away: every node that carried the fence but the last one.
      for (const i of away.filter((i) => i !== count - 1)) rig.stop(i);
      const next = await locks.acquire("vault");
      expect(next.fence).toBeGreaterThan(fence);
      await next.release();
    });
  });
});
