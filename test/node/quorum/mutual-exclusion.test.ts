// Quorum mode on real redis-servers: concurrent callers never share a lock.
import { describe, expect, it } from "vitest";
import { createLocks, type Lease } from "../../../src/index.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

const leasesIn = (outcomes: (Lease | null)[]) => outcomes.filter((lease): lease is Lease => lease !== null);

describe.each([3, 5])("mutual exclusion on %i nodes", (count) => {
  it("gives a free lock to exactly one of 30 concurrent tryAcquire calls", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("mx"));
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => locks.tryAcquire("seat:1")));
    const winners = leasesIn(outcomes);
    expect(winners).toHaveLength(1);
    expect(await locks.inspect("seat:1")).toMatchObject({ held: true, fence: winners[0]!.fence, holds: 1 });
    expect(await winners[0]!.release()).toBe("released");
    expect((await locks.inspect("seat:1")).held).toBe(false);
  });

  it("gives a held lock to none of 30 concurrent tryAcquire calls", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("mx-held"));
    const holder = await locks.acquire("seat:2");
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => locks.tryAcquire("seat:2")));
    expect(leasesIn(outcomes)).toHaveLength(0);
    // The losers gave back nothing of the holder's: it still holds on every node.
    const state = await locks.inspect("seat:2");
    expect(state).toMatchObject({ held: true, fence: holder.fence, holds: 1 });
    expect(state.nodes?.every((node) => node?.held && node.fence === holder.fence)).toBe(true);
    expect(await holder.release()).toBe("released");
  });

  // Each caller its own clients, as separate processes would be: their requests reach the nodes in
  // different orders, so votes can split. At most one wins, and a split leaves nothing held for good.
  it("gives a free lock to at most one of 30 separate processes, and a lost vote is given back", async () => {
    const rig = await nodes(count);
    const prefix = uniquePrefix("mx-procs");
    const processes = Array.from({ length: 30 }, () => createLocks({ redis: rig.freshClients(), prefix, timeoutMs: 2_000 }));
    const outcomes = await Promise.all(processes.map((locks) => locks.tryAcquire("seat:3")));
    const winners = leasesIn(outcomes);
    expect(winners.length).toBeLessThanOrEqual(1);
    await winners[0]?.release();
    // Every loser's grants were given back on all nodes: the next caller finds the lock free.
    const next = await rig.locks(prefix).acquire("seat:3", { waitMs: 5_000 });
    if (winners[0]) expect(next.fence).toBeGreaterThan(winners[0].fence);
    await next.release();
  });

  it("keeps at most one holder at a time when one node is down", async () => {
    const rig = await nodes(count);
    await rig.kill(count - 1);
    const locks = rig.locks(uniquePrefix("mx-down"));
    const winners = leasesIn(await Promise.all(Array.from({ length: 30 }, () => locks.tryAcquire("seat:4"))));
    expect(winners).toHaveLength(1);
    const again = leasesIn(await Promise.all(Array.from({ length: 30 }, () => locks.tryAcquire("seat:4"))));
    expect(again).toHaveLength(0);
    expect(await winners[0]!.release()).toBe("released");
  });
});
