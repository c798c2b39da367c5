// Quorum mode: a heartbeat's repair of a node that lost the lease, held up in the network until
// the lease was released and another owner had held the lock, must not leave that node holding the
// old fence, where a reentrant acquire would find it again: fences never go back.
import { describe, expect, it } from "vitest";
import { createLocks } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { privateServers } from "../../support/quorum/private-servers.ts";
import { steered } from "../../support/quorum/steered-client.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const rig = privateServers(3);

/** A client's view of the three nodes: connections of its own, each steerable. */
function client() {
  return rig.servers.map((server) => steered(fromIoredis(rig.connect(server))));
}

describe("a late repair in quorum mode", () => {
  it("never hands a reentrant acquire a fence below the holder's that came between", async () => {
    const prefix = uniquePrefix("late-repair");
    const options = { prefix, leaseMs: 10_000, timeoutMs: 5_000 };
    const [o, a] = [client(), client()];
    const ours = createLocks({ ...options, redis: o.map((node) => node.client) });
    const theirs = createLocks({ ...options, redis: a.map((node) => node.client) });
    // Ours takes the lock on nodes 0 and 2: its acquire to node 1 is lost.
    o[1]!.steer = (script) => (script === "acquire" ? "lost" : undefined);
    const first = (await ours.tryAcquire("r"))!;
    // A heartbeat: node 1 says no, so it is repaired; that acquire is held up on the way.
    let landed!: () => void;
    const held = new Promise<void>((resolve) => (landed = resolve));
    const afterRepair: string[] = [];
    o[1]!.steer = (script) => (afterRepair.push(script), script === "acquire" ? held : undefined);
    await first.heartbeat();
    await until(async () => afterRepair.includes("acquire"), 5_000);
    // Released, but the release to node 2 is lost: node 2 keeps the hold.
    o[2]!.steer = (script) => (script === "release" ? "lost" : undefined);
    const released = first.release().catch(() => "unknown");
    const { lock } = lockKeys(prefix, "r");
    const [node0, node1] = rig.servers.slice(0, 2).map(rig.connect);
    await until(async () => (await node0!.exists(lock)) === 0, 5_000);
    // Another owner, cut off from node 2, holds the lock on nodes 0 and 1, and releases it.
    a[2]!.steer = () => "lost";
    const between = (await theirs.tryAcquire("r"))!;
    expect(between.fence).toBeGreaterThan(first.fence);
    expect(await between.release()).toBe("released");
    // The repair lands on node 1 now, within timeoutMs; the lease was released, so it goes back.
    landed();
    await until(async () => afterRepair.includes("leave"), 5_000);
    await until(async () => {
      const [owner, fence] = await node1!.hmget(lock, "owner", "fence");
      return owner === null || Number(fence) === first.fence;
    }, 5_000);
    await released;
    o[2]!.steer = undefined;
    const again = await ours.tryAcquire("r", { owner: first.owner });
    expect(again?.fence).toBeGreaterThan(between.fence);
  });
});
