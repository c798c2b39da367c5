// Quorum mode through the ordinary Locks and Lease API: reentrancy, release outcomes, inspect, and
// many contenders taking turns.
import { describe, expect, it, vi } from "vitest";
import { LockLostError, type LockState } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();
type NodeState = NonNullable<NonNullable<LockState["nodes"]>[number]>;

describe.each([3, 5])("the lock set API on %i nodes", (count) => {
  it("joins the same owner's lease with the same fence, and frees it after the last release", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("reentrant"));
    const outer = await locks.acquire("cart");
    const inner = await locks.acquire("cart", { owner: outer.owner, waitMs: 0 });
    expect(inner.fence).toBe(outer.fence);
    expect(await locks.inspect("cart")).toMatchObject({ held: true, fence: outer.fence, holds: 2 });
    expect(await locks.tryAcquire("cart")).toBeNull();
    expect(await inner.release()).toBe("released");
    expect(await locks.inspect("cart")).toMatchObject({ held: true, holds: 1 });
    expect(await outer.release()).toBe("released");
    expect(await locks.inspect("cart")).toMatchObject({ held: false, fence: outer.fence, holds: 0 });
  });

  it("releases as released, then expired for a lapsed lease, and a second release repeats the first", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("outcomes"));
    const lease = await locks.acquire("cart");
    expect(await lease.release()).toBe("released");
    expect(await lease.release()).toBe("released");
    const short = await locks.acquire("cart", { leaseMs: 300 });
    await sleep(600);
    await expect(short.heartbeat()).rejects.toBeInstanceOf(LockLostError);
    expect(await short.release()).toBe("expired");
    // A resumed copy of a lapsed lease: the nodes, not the client, say it is gone.
    await expect(locks.resume(short).heartbeat()).rejects.toBeInstanceOf(LockLostError);
  });

  it("inspects the quorum's view and each node's, never showing the owner", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("inspect"));
    expect(await locks.inspect("cart")).toMatchObject({ held: false, fence: null, holds: 0 });
    const lease = await locks.acquire("cart");
    const state = await locks.inspect("cart");
    expect(state).toMatchObject({ held: true, fence: lease.fence, holds: 1, waiters: 0 });
    expect(state.remainingMs).toBeGreaterThan(5_000);
    expect(state.nodes).toHaveLength(count);
    expect(JSON.stringify(state)).not.toContain(lease.owner);
    // A call returns on a majority; the last node's grant, and later its release, may still be on the way.
    const eachNode = async (check: (node: NodeState) => boolean) =>
      (await locks.inspect("cart")).nodes?.every((node) => node !== null && check(node)) ?? false;
    await until(() => eachNode((node) => node.held && node.fence === lease.fence && node.holds === 1), 5_000);
    await lease.release();
    expect(await locks.inspect("cart")).toMatchObject({ held: false, fence: lease.fence });
    await until(() => eachNode((node) => !node.held), 5_000);
  });

  // A guard built with wake: "push" must not fail every request on a quorum lock set.
  it('waits by backoff when asked for wake: "push", which needs one Redis, and says so once', async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("push"));
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const held = await locks.acquire("cart");
      setTimeout(() => void held.release(), 200);
      const next = await locks.acquire("cart", { wake: "push", waitMs: 5_000 });
      expect(next.fence).toBeGreaterThan(held.fence);
      await (await locks.acquire("cart", { wake: "push", owner: next.owner })).release();
      await next.release();
      expect(warn.mock.calls).toEqual([[expect.stringMatching(/wake: "push" needs one Redis/)]]);
    } finally {
      warn.mockRestore();
    }
  });
});

describe("8 contenders on 3 nodes", () => {
  // Each contender has its own clients, as separate processes would: their votes can split, and the
  // jittered backoff must still let every one of them through in time.
  it("all finish withLock within waitMs, one at a time, with fences rising in the order they got the lock", async () => {
    const rig = await nodes(3);
    const prefix = uniquePrefix("contenders");
    const fences: number[] = [];
    let inside = 0;
    let overlaps = 0;
    const contender = async () => {
      const locks = rig.locks(prefix, { leaseMs: 5_000, waitMs: 30_000 }, rig.freshClients());
      for (let round = 0; round < 2; round++) {
        await locks.withLock("hot", async (lease) => {
          if (inside++ > 0) overlaps++;
          fences.push(lease.fence);
          await sleep(20);
          inside--;
        });
      }
    };
    await Promise.all(Array.from({ length: 8 }, contender));
    expect(overlaps).toBe(0);
    expect(fences).toHaveLength(16);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
  });
});
