// Minimal scenarios for what the model and chaos runs found, step by step on three nodes v, w, z,
// one node faulted at a time. Each returns what its test asserts on.
import { createLocks, type Lease, type Locks } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { withClientClock } from "./chaos-client-clock.ts";
import type { ModelNodes } from "./model-nodes.ts";

const [V, W, Z] = [0, 1, 2];
const LEASE_MS = 6_000;

function lockSet(nodes: ModelNodes, prefix: string): Locks {
  return createLocks({ redis: nodes.clients(), prefix, leaseMs: LEASE_MS, timeoutMs: 300 });
}

/**
 * Lease `stale`'s hold outlives its others on z: z is paused while `stale` heartbeats, so z extends
 * it only on SIGCONT, about 2.8 s after v and w did. Resolves once v and w have let it go (z has not).
 */
async function holdOutlivingOnZ(nodes: ModelNodes, locks: Locks): Promise<Lease> {
  const startedAt = performance.now();
  const stale = (await locks.tryAcquire("r"))!;
  nodes.pause(Z);
  await stale.heartbeat();
  await sleep(2_800);
  nodes.resume(Z);
  await sleep(LEASE_MS + 300 - (performance.now() - startedAt));
  return stale;
}

/**
 * A reentrant call after another owner's lease (clocks: a client 10 minutes ahead; data: one node
 * restarts empty):
 * 1. O's lease; its hold outlives the others on z (holdOutlivingOnZ): O's lease has lapsed.
 * 2. X, its clock 10 minutes ahead, takes the lock on v and w (z: busy with O's hold); X's fence is
 *    X's clock, written to v and w, and raised on z as z's last fence. X releases.
 * 3. w restarts empty (v and z keep X's fence).
 * 4. v pauses; O joins its lease (acquire with O's owner) on z and w. Before a8e8b07, z joined O's
 *    old hold and answered its old fence, w minted O's clock, and the lease got the higher of the
 *    two: below X's. Since, z drops the hold (it has heard of a later fence) and mints above X's.
 * Every node that answered X's acquire carried X's fence, and z kept it: inside the stated
 * condition. Resolves with X's fence and the joined lease's.
 */
export async function fenceBackThroughStaleJoin(nodes: ModelNodes, prefix: string): Promise<{ x: number; joined: number }> {
  const locks = lockSet(nodes, prefix);
  const o = await holdOutlivingOnZ(nodes, locks);
  const x = (await withClientClock(600_000, () => lockSet(nodes, prefix).tryAcquire("r")))!;
  await x.release();
  await nodes.restartEmpty(W);
  nodes.pause(V);
  try {
    const joined = await locks.acquire("r", { owner: o.owner, waitMs: 0 });
    return { x: x.fence, joined: joined.fence };
  } finally {
    nodes.resume(V);
  }
}

/**
 * A join of a valid lease while one of its nodes is paused (no clock, no data lost):
 * 1. C's hold outlives its others on z (holdOutlivingOnZ).
 * 2. O takes the lock on v and w (z: busy with C's hold, which then lapses).
 * 3. w pauses; O joins while its lease has 3 s to run: v joins, z would grant anew. Taking the lock
 *    afresh on v and z would change O's fence under it, so the join waits for w, which resumes
 *    600 ms later, and then joins O's lease on v and w with its fence.
 * Resolves with both fences, and how O's own heartbeat then fares.
 */
export async function joinOfValidLeaseChangesFence(nodes: ModelNodes, prefix: string) {
  const locks = lockSet(nodes, prefix);
  await holdOutlivingOnZ(nodes, locks);
  const o = (await locks.tryAcquire("r"))!;
  // C's hold on z lapses about 2.8 s after O's acquire.
  await sleep(3_000);
  nodes.pause(W);
  const resumed = sleep(600).then(() => nodes.resume(W));
  let joined: Lease;
  try {
    joined = await locks.acquire("r", { owner: o.owner, waitMs: 2_500 });
  } finally {
    await resumed;
  }
  const validMs = Math.round(o.remainingMs());
  const heartbeat = await o.heartbeat().then(() => "ok", (error: Error) => error.name);
  return { fence: o.fence, joined: joined.fence, validMs, heartbeat };
}

/**
 * A join of a valid lease, on every node, where one node holds the owner's lease with another fence
 * (no clock, no data lost; model seed 1060 found it after a8e8b07):
 * 1. C's hold outlives its others on z (holdOutlivingOnZ).
 * 2. O takes the lock on v and w (z: busy with C's hold, which then lapses).
 * 3. z pauses; O joins (J1): v and w join with O's fence; J1's request to z times out (z resumes
 *    500 ms later) and is left queued there. z serves it: z is free by then, so it takes the lock
 *    for O afresh, with a fence of its own (J1's proposal).
 * 4. w pauses for 600 ms; O joins again (J2): v joins with O's fence, z with its own: two joins, a
 *    majority, with two fences between them. On 60ad485 J2 takes the higher, z's, and writes it
 *    over O's fence on v; O's lease is then lost while valid. Only w could show which fence a
 *    majority holds: the join has to wait for it.
 * Resolves with O's fence, J2's, and how O's own heartbeat then fares.
 */
export async function joinWhereOneNodeHoldsAnotherFence(nodes: ModelNodes, prefix: string) {
  const locks = lockSet(nodes, prefix);
  await holdOutlivingOnZ(nodes, locks);
  const o = (await locks.tryAcquire("r"))!;
  await sleep(3_000);
  nodes.pause(Z);
  let first: Lease;
  try {
    first = await locks.acquire("r", { owner: o.owner, waitMs: 0 });
    // Past timeoutMs: J1's call on z gives up, and nothing writes O's fence over what z grants.
    await sleep(500);
  } finally {
    nodes.resume(Z);
  }
  await sleep(300);
  nodes.pause(W);
  const resumed = sleep(600).then(() => nodes.resume(W));
  let second: Lease;
  try {
    second = await locks.acquire("r", { owner: o.owner, waitMs: 2_500 });
  } finally {
    await resumed;
  }
  const validMs = Math.round(o.remainingMs());
  const heartbeat = await o.heartbeat().then(() => "ok", (error: Error) => error.name);
  return { fence: o.fence, first: first.fence, second: second.fence, validMs, heartbeat };
}

/**
 * Two holds of one owner, and one released, lets another owner in while the other is valid (pauses
 * only, one node at a time; model seed 1076 found it):
 * 1. O takes the lock on v, w and z with a 3 s lease (L1). v pauses for 3.6 s while L1 heartbeats on
 *    w and z: O's hold on v lapses there.
 * 2. O joins (J): w and z join (two holds each), v is free and serves O afresh: one hold, taking
 *    O's fence. J keeps the fence, as it should.
 * 3. z pauses; J heartbeats on v and w 1.5 s later; z's hold, not extended, lapses while paused.
 * 4. O releases L1: w keeps one hold, but v's only hold goes: the lock is gone from v.
 * 5. z resumes, free. X tries the lock: v and z grant it, while J still has validity left.
 * Resolves with X's fence (null when it was refused) and J's remainingMs when X got its answer.
 */
export async function releaseOfOneHoldDropsAnother(nodes: ModelNodes, prefix: string) {
  const locks = createLocks({ redis: nodes.clients(), prefix, leaseMs: 3_000, timeoutMs: 300 });
  const l1 = (await locks.tryAcquire("r"))!;
  nodes.pause(V);
  try {
    for (let i = 0; i < 3; i++) {
      await sleep(1_000);
      await l1.heartbeat();
    }
    await sleep(600);
  } finally {
    nodes.resume(V);
  }
  await sleep(100);
  const joined = await locks.acquire("r", { owner: l1.owner, waitMs: 0 });
  const joinedAt = performance.now();
  nodes.pause(Z);
  try {
    await sleep(1_500);
    await joined.heartbeat();
    await sleep(3_200 - (performance.now() - joinedAt));
    await l1.release();
  } finally {
    nodes.resume(Z);
  }
  await sleep(100);
  const x = await lockSet(nodes, prefix).tryAcquire("r");
  return { x: x?.fence ?? null, joinedRemainingMs: Math.round(joined.remainingMs()), sameFence: joined.fence === l1.fence };
}
