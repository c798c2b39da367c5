// Quorum mode: each node counts a reentrant lease's holds, and a lost request leaves one node off
// by one. Short after a lost join, releasing one hold frees the lock there under a valid lease: a
// heartbeat gives the node the count again. Over after a lost release, the count must not spread.
import { expect, it } from "vitest";
import { createLocks } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { privateServers } from "../../support/quorum/private-servers.ts";
import { steered } from "../../support/quorum/steered-client.ts";
import { steeredLockSet } from "../../support/quorum/steered-lock-set.ts";

const rig = privateServers(3);

const lockSetOn = (label: string) => steeredLockSet(rig, label, 500);

it("a heartbeat gives a node the holds a lost join left it short of, so releasing one hold keeps the other on every node", async () => {
  const { prefix, nodes, locks, holds, holdsSettle } = lockSetOn("hold-counts");
  const outer = (await locks.tryAcquire("r"))!;
  await holdsSettle("1,1,1");
  nodes[1]!.steer = (script) => (script === "acquire" ? "lost" : undefined);
  const inner = await locks.acquire("r", { owner: outer.owner, waitMs: 0 });
  nodes[1]!.steer = undefined;
  expect(await holds()).toEqual([2, 1, 2]);
  await outer.heartbeat();
  await holdsSettle("2,2,2");
  expect(await inner.release()).toBe("released");
  await holdsSettle("1,1,1");
  // Another owner, even one cut off from node 2, finds the lock held.
  const other = rig.servers.map((server) => steered(fromIoredis(rig.connect(server))));
  other[2]!.steer = () => "lost";
  expect(await createLocks({ redis: other.map((node) => node.client), prefix, timeoutMs: 500 }).tryAcquire("r")).toBeNull();
  expect(await outer.release()).toBe("released");
});

it("a release lost on one node does not raise the others' holds, so the lock is free after every release", async () => {
  const { nodes, locks, holdsSettle, other } = lockSetOn("hold-counts-lost-release");
  const outer = (await locks.tryAcquire("r"))!;
  const inner = await locks.acquire("r", { owner: outer.owner, waitMs: 0 });
  await holdsSettle("2,2,2");
  nodes[0]!.steer = (script) => (script === "release" ? "lost" : undefined);
  expect(await inner.release()).toBe("released");
  nodes[0]!.steer = undefined;
  await holdsSettle("2,1,1");
  await outer.heartbeat();
  expect(await outer.release()).toBe("released");
  // Only the node that missed a release still holds: a majority is free.
  const next = await other().tryAcquire("r");
  expect(next?.fence).toBeGreaterThan(outer.fence);
  await next?.release();
});

it("after a lost join and a node that lost its data, a heartbeat gives both the lease's holds", async () => {
  const { nodes, locks, lock, admins, holds, holdsSettle, other } = lockSetOn("hold-counts-restart");
  const outer = (await locks.tryAcquire("r"))!;
  await holdsSettle("1,1,1");
  nodes[1]!.steer = (script) => (script === "acquire" ? "lost" : undefined);
  const inner = await locks.acquire("r", { owner: outer.owner, waitMs: 0 });
  nodes[1]!.steer = undefined;
  await admins[2]!.del(lock); // node 2 restarted empty, as far as this lock goes
  expect(await holds()).toEqual([2, 1, 0]);
  // Only nodes 0 and 1 say yes, with counts 2 and 1: a lost join and a lost release look alike.
  await outer.heartbeat();
  await holdsSettle("2,2,2");
  expect(await inner.release()).toBe("released");
  expect(await other().tryAcquire("r")).toBeNull();
  expect(await outer.release()).toBe("released");
});
