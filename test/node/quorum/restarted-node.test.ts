// Quorum mode with a node restarted empty (no persistence): the lock stays exclusive, fences keep
// rising, and the holder's heartbeat gives the node its hold back.
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../support/lock-keys.ts";
import { withFetch } from "../../support/fetch-wrappers.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { slowNode } from "../../support/quorum/replaying-fetch.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

describe.each([3, 5])("on %i nodes, one restarted empty", (count) => {
  it("keeps the lock exclusive while held, and the next holder's fence is higher", async () => {
    const rig = await nodes(count);
    const prefix = uniquePrefix("restart");
    const locks = rig.locks(prefix);
    const holder = await locks.acquire("batch");
    await rig.restartEmpty(0);
    expect(await rig.lastFence(0, prefix, "batch")).toBe(0); // it really forgot

    // The restarted node grants, the others refuse: busy, and the restarted node's grant is given back.
    for (let i = 0; i < 5; i++) expect(await locks.tryAcquire("batch")).toBeNull();
    expect(await holder.release()).toBe("released");
    const next = await locks.acquire("batch");
    expect(next.fence).toBeGreaterThan(holder.fence);
    await next.release();
  });

  // The restarted node answers last (farther away, or loading the script again): the heartbeat has
  // its majority by then, and must still repair it.
  it("repairs the restarted node on heartbeat, even when it answers last: it holds the lease's fence again", async () => {
    const rig = await nodes(count);
    const prefix = uniquePrefix("repair");
    const locks = rig.locks(prefix);
    const holder = await locks.acquire("batch");
    await rig.restartEmpty(1);
    expect(await rig.redis(1).admin.exists(lockKeys(prefix, "batch").lock)).toBe(0);
    // One heartbeat, then no more: the repair runs in the background, after the heartbeat has answered.
    await withFetch(slowNode(rig.node(1).server.url, 300), () => holder.heartbeat());
    await until(async () => {
      const node = (await locks.inspect("batch")).nodes?.[1];
      return node?.held === true && node.fence === holder.fence;
    }, 5_000);
    // Repaired, the node counts again: with as many others down as a majority allows, it still holds.
    for (let i = 0; i < Math.floor((count - 1) / 2); i++) await rig.kill(count - 1 - i);
    await holder.heartbeat();
    expect(await locks.inspect("batch")).toMatchObject({ held: true, fence: holder.fence });
    expect(await holder.release()).toBe("released");
  });

  it("keeps fences rising over successive holders while each node in turn restarts empty", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("rolling"));
    let last = 0;
    for (let round = 0; round < count + 1; round++) {
      const lease = await locks.acquire("batch");
      expect(lease.fence).toBeGreaterThan(last);
      last = lease.fence;
      // Restarted while held and after: both orders of loss and release.
      if (round % 2 === 0) await rig.restartEmpty(round % count);
      expect(await lease.release()).toBe("released");
      if (round % 2 === 1) await rig.restartEmpty(round % count);
    }
  });
});
