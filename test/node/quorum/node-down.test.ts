// Quorum mode with a minority of nodes down: every operation works and a busy lock stays busy, not
// unavailable, whichever order the nodes answer in.
import { describe, expect, it } from "vitest";
import { sleep } from "../../../src/waiting/backoff.ts";
import { nodesPerTest, type QuorumNodes } from "../../support/quorum/nodes.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

// Killed: the node's local server answers 503 at once. Cut: its address leads nowhere, as in a partition.
const faults: [string, (rig: QuorumNodes, i: number) => Promise<void> | void][] = [
  ["killed", (rig, i) => rig.kill(i)],
  ["cut off", (rig, i) => rig.cut(i)],
];

describe.each([3, 5])("on %i nodes", (count) => {
  const minority = Math.floor((count - 1) / 2);
  const down = Array.from({ length: minority }, (_, k) => count - 1 - k);
  const start = async (label: string, fault = faults[0]![1]) => {
    const rig = await nodes(count);
    for (const i of down) await fault(rig, i);
    return { rig, locks: rig.locks(uniquePrefix(label)) };
  };

  describe.each(faults)(`with ${minority} node(s) %s`, (_, fault) => {
    it("acquires, heartbeats and releases, and a held lock is busy (null), never unavailable", async () => {
      const { locks } = await start("down-ops", fault);
      const lease = await locks.acquire("report");
      await lease.heartbeat();
      expect(lease.remainingMs()).toBeGreaterThan(5_000);
      const state = await locks.inspect("report");
      expect(state).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
      // The view names which nodes did not answer.
      expect(down.every((i) => state.nodes?.[i] === null)).toBe(true);
      // Repeated: a down node's failure often comes first, and must not make a busy lock "unavailable".
      for (let i = 0; i < 5; i++) expect(await locks.tryAcquire("report")).toBeNull();
      expect(await lease.release()).toBe("released");
      const next = await locks.acquire("report");
      expect(next.fence).toBeGreaterThan(lease.fence);
      await next.release();
    });
  });

  describe(`with ${minority} node(s) killed`, () => {
    it("lets acquire wait for a held lock and take it once released", async () => {
      const { locks } = await start("down-wait");
      // A lease far longer than the wait: only the release, not the lease running out, lets the waiter in.
      const holder = await locks.acquire("report", { leaseMs: 60_000 });
      const released = sleep(300).then(() => holder.release());
      const next = await locks.acquire("report", { waitMs: 10_000 });
      expect(await released).toBe("released");
      expect(next.fence).toBeGreaterThan(holder.fence);
      await next.release();
    });

    it("releases a lapsed lease as expired, without throwing", async () => {
      const { locks } = await start("down-expired");
      const lease = await locks.acquire("report", { leaseMs: 300 });
      await sleep(600);
      expect(await lease.release()).toBe("expired");
    });

    it("reports a lease another holder took over as lost on heartbeat", async () => {
      const { locks } = await start("down-lost");
      const first = await locks.acquire("report", { leaseMs: 300 });
      await sleep(600);
      const second = await locks.acquire("report");
      // A copy of the first lease that has not lapsed on this client: only the nodes can say it is lost.
      await expect(locks.resume(first).heartbeat()).rejects.toMatchObject({ name: "LockLostError" });
      await second.release();
    });
  });
});
