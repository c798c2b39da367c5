// Quorum mode: a node's reply that comes after the vote, when the script it answers has long run
// there. A lease and its reentrant join share owner and fence; releasing one must not take the
// other's holds, and a released lease must not be taken again by a heartbeat's repair.
import { expect, it } from "vitest";
import { privateServers } from "../../support/quorum/private-servers.ts";
import { steeredLockSet } from "../../support/quorum/steered-lock-set.ts";

const rig = privateServers(3);

const lockSetOn = (label: string) => steeredLockSet(rig, label, 5_000);

/** A promise, and the function that settles it. */
function gate(): [Promise<void>, () => void] {
  let open!: () => void;
  return [new Promise<void>((resolve) => (open = resolve)), () => open()];
}

it("releasing a lease leaves its reentrant join every hold, though replies to both acquires come after the release", async () => {
  const { nodes, locks, holds, holdsSettle, other } = lockSetOn("late-join");
  // Scripts loaded first: a NOSCRIPT answer passes the steer at once, and the join's EVAL could then
  // reach node 2 before the lease's, taking the node afresh (it flaked so under load).
  await (await locks.acquire("warm")).release();
  const [late, deliver] = gate();
  // Each acquire has run on every node; node 2's reply to the lease, node 1's to the join, come late.
  nodes[2]!.steer = (script) => (script === "acquire" ? { replyAfter: late } : undefined);
  const outer = (await locks.tryAcquire("r"))!;
  nodes[2]!.steer = undefined;
  nodes[1]!.steer = (script) => (script === "acquire" ? { replyAfter: late } : undefined);
  const inner = await locks.acquire("r", { owner: outer.owner, waitMs: 0 });
  nodes[1]!.steer = undefined;
  expect(inner.fence).toBe(outer.fence);
  await holdsSettle("2,2,2");
  expect(await outer.release()).toBe("released");
  await holdsSettle("1,1,1");
  deliver();
  await Promise.all(nodes.map((node) => node.idle())); // whatever the late replies set off has run
  expect(await holds()).toEqual([1, 1, 1]);
  expect(await other().tryAcquire("r")).toBeNull();
  await inner.heartbeat(); // still held on a majority: no LockLostError
  expect(await inner.release()).toBe("released");
  await holdsSettle("0,0,0");
});

it("a heartbeat's repair of a node that answers after the release does not take the lock again", async () => {
  const { nodes, locks, lock, admins, holds, holdsSettle } = lockSetOn("late-repair");
  const lease = (await locks.tryAcquire("r"))!;
  await holdsSettle("1,1,1");
  await admins[2]!.del(lock); // node 2 lost the hold
  const [late, deliver] = gate();
  nodes[2]!.steer = (script) => (script === "heartbeat" ? { replyAfter: late } : undefined);
  await lease.heartbeat(); // answered by nodes 0 and 1
  nodes[2]!.steer = undefined;
  expect(await lease.release()).toBe("released");
  deliver(); // node 2's "no" arrives now
  await Promise.all(nodes.map((node) => node.idle())); // whatever the late replies set off has run
  expect(await holds()).toEqual([0, 0, 0]);
});
