// Quorum mode when HTTP requests run twice (a replayed request, or a lost reply the client resends):
// no second fence, no second hold, no second release, on any node.
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../support/lock-keys.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { sendingTwice, withFetch } from "../../support/fetch-wrappers.ts";
import { nodesPerTest, type QuorumNodes } from "../../support/quorum/nodes.ts";
import { droppingFirstReplies, lateRetryOf, losingRepliesOf, tracked } from "../../support/quorum/replaying-fetch.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

/** Each node's own view: the lock's fence and holds (0 when free), and the last fence it minted. */
async function perNode(rig: QuorumNodes, prefix: string, name: string) {
  const keys = lockKeys(prefix, name);
  return Promise.all(rig.nodes.map(async (_, i) => {
    const [fence, holds] = await rig.redis(i).admin.hmget(keys.lock, "fence", "holds");
    return { fence: Number(fence ?? 0), holds: Number(holds ?? 0), last: await rig.lastFence(i, prefix, name) };
  }));
}

async function start(count: number, label: string) {
  const rig = await nodes(count);
  const prefix = uniquePrefix(label);
  const locks = rig.locks(prefix);
  await (await locks.acquire("warm")).release(); // scripts loaded: one request per script call
  return { rig, prefix, locks };
}

describe.each([
  ["every request sent twice", () => sendingTwice],
  // The client resends each of these once: @upstash/redis retries a request whose reply was lost.
  ["the first replies lost after the nodes applied them", () => droppingFirstReplies(4)],
])("retried requests: %s", (_, network) => {
  // Three nodes: what a duplicate does happens on each node alone; five add only time.
  describe.each([3])("on %i nodes", (count) => {
    // Each step waits for the copies still on their way to the nodes beyond the majority.
    const retried = async <T>(fn: () => Promise<T>) => {
      const net = tracked(network());
      return withFetch(net.wrap, async () => {
        const result = await fn();
        await net.idle();
        return result;
      });
    };

    it("acquire mints one fence with one hold on every node, and release frees it once", async () => {
      const { rig, prefix, locks } = await start(count, "retry-acquire");
      const lease = await retried(() => locks.acquire("order"));
      for (const node of await perNode(rig, prefix, "order")) expect(node).toEqual({ fence: lease.fence, holds: 1, last: lease.fence });
      expect(await retried(() => lease.release())).toBe("released");
      for (const node of await perNode(rig, prefix, "order")) expect(node).toEqual({ fence: 0, holds: 0, last: lease.fence });
      const next = await locks.acquire("order");
      expect(next.fence).toBeGreaterThan(lease.fence);
      await next.release();
    });

    it("a reentrant acquire counts one hold, and each release gives back one", async () => {
      const { rig, prefix, locks } = await start(count, "retry-join");
      const outer = await locks.acquire("order");
      const inner = await retried(() => locks.acquire("order", { owner: outer.owner }));
      expect(inner.fence).toBe(outer.fence);
      for (const node of await perNode(rig, prefix, "order")) expect(node.holds).toBe(2);
      expect(await retried(() => inner.release())).toBe("released");
      for (const node of await perNode(rig, prefix, "order")) expect(node).toEqual({ fence: outer.fence, holds: 1, last: outer.fence });
      expect(await retried(() => outer.release())).toBe("released");
      expect((await locks.inspect("order")).held).toBe(false);
    });

    // Nodes that remember different, higher fences mint different ones, so whichever majority
    // answers first, the lease's fence is written back (adopt.lua), and that request runs twice too.
    it("a written-back fence is set once: every node holds the lease's fence with one hold", async () => {
      const { rig, prefix, locks } = await start(count, "retry-adopt");
      const high = (Date.now() + 60_000) * 1000;
      const remembered = Array.from({ length: Math.floor(count / 2) + 1 }, (_, i) => high + 10 * i);
      for (const [i, last] of remembered.entries()) await rig.redis(i).admin.hset(lockKeys(prefix, "order").fence, "last", last);
      const lease = await retried(() => locks.acquire("order"));
      expect(lease.fence).toBeGreaterThan(high);
      let carriers = 0;
      for (const node of await perNode(rig, prefix, "order")) {
        // The lease's fence with one hold; or, on a node that knew a later fence than the lease's
        // before it minted, nothing: a hold there may not take the lower fence.
        if (node.holds) {
          expect(node).toMatchObject({ fence: lease.fence, holds: 1 });
          carriers++;
        } else {
          expect(node.last).toBeGreaterThan(lease.fence);
        }
        // Raised to the lease's fence, or its own first mint: never a second one.
        expect(node.last).toBeLessThanOrEqual(Math.max(lease.fence, ...remembered.map((f) => f + 1)));
      }
      expect(carriers).toBeGreaterThanOrEqual(Math.floor(count / 2) + 1);
      await retried(() => lease.heartbeat());
      expect(await retried(() => lease.release())).toBe("released");
      for (const node of await perNode(rig, prefix, "order")) expect(node).toMatchObject({ fence: 0, holds: 0 });
      const next = await locks.acquire("order");
      expect(next.fence).toBeGreaterThan(lease.fence);
      await next.release();
    });
  });
});

// In quorum mode a call returns on a majority's answers: the client's own retry of a request to a
// slow node can land after the lease was released, when the lock there is free again. It takes the
// lock there and mints a fence, which no lease ever receives. The release had taken a hold there, so
// the new one may stand in for a reentrant join's: it is not given back (src/quorum/late-grants.ts),
// and costs the slow node's vote until its TTL.
describe.each([3, 5])("a retry that lands after the lease was released, on %i nodes", (count) => {
  it("leaves its hold on the slow node only until its TTL, and no lease gets the fence it minted", async () => {
    const { rig, prefix, locks } = await start(count, "late-retry");
    const slow = count - 1;
    const late = lateRetryOf(scripts.acquire, rig.node(slow).server.url, 500);
    const net = tracked(late);
    const lease = await withFetch(net.wrap, async () => {
      const lease = await locks.acquire("order");
      expect(await lease.release()).toBe("released");
      await net.idle();
      return lease;
    });
    expect(late.landed()).toBe(true);
    // The retry's own hold, with the fence it minted after the lease's, not the lease's.
    const slowNode = (await perNode(rig, prefix, "order"))[slow]!;
    expect(slowNode).toEqual({ holds: 1, fence: lease.fence + 1, last: lease.fence + 1 });
    expect((await locks.inspect("order")).nodes?.[slow]?.remainingMs).toBeLessThanOrEqual(10_000);
    const next = await locks.acquire("order");
    expect(next.fence).toBeGreaterThan(lease.fence + 1);
    await next.release();
  });
});

// A node whose every reply to the acquire was lost holds the lease with the fence it minted itself,
// which the write-back never reached: heartbeat repairs it, and release must then free it there too.
describe.each([3, 5])("a node that minted its own fence for the lease, on %i nodes", (count) => {
  it("is repaired by heartbeat to the lease's fence, and holds nothing after release", async () => {
    const { rig, prefix, locks } = await start(count, "own-fence");
    // Its acquire reply is lost, and its hold lapses: what it mints on the repair differs from the lease's.
    const net = tracked(losingRepliesOf(scripts.acquire, rig.node(0).server.url));
    const lease = await withFetch(net.wrap, async () => {
      const lease = await locks.acquire("order");
      await net.idle();
      return lease;
    });
    await rig.redis(0).admin.del(lockKeys(prefix, "order").lock);
    await until(async () => {
      await lease.heartbeat();
      const [node] = await perNode(rig, prefix, "order");
      return node!.fence === lease.fence && node!.last > lease.fence;
    }, 5_000);
    expect(await lease.release()).toBe("released");
    await until(async () => (await perNode(rig, prefix, "order")).every((node) => node.holds === 0), 2_000);
  });

  it("is not given the lease's lower fence when it knew a later one, and holds nothing", async () => {
    const { rig, prefix, locks } = await start(count, "later-fence");
    // It remembers a higher fence (another client's, say), so the lease's fence would go back there.
    await rig.redis(0).admin.hset(lockKeys(prefix, "order").fence, "last", (Date.now() + 60_000) * 1000);
    const net = tracked(losingRepliesOf(scripts.acquire, rig.node(0).server.url));
    const lease = await withFetch(net.wrap, async () => {
      const lease = await locks.acquire("order");
      await net.idle();
      return lease;
    });
    await lease.heartbeat();
    await until(async () => (await perNode(rig, prefix, "order"))[0]!.holds === 0, 5_000);
    expect(await lease.release()).toBe("released");
    await until(async () => (await perNode(rig, prefix, "order")).every((node) => node.holds === 0), 2_000);
  });
});
