// A quorum lease's heartbeat and release: sent to every node, decided by a majority.
import type { HeldLease, LockBackend } from "../core/backend.ts";
import { newToken } from "../core/keys.ts";
import type { Run } from "../redis/node-runner.ts";
import { RETRY_WINDOW_MS, type Integers } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
import { quorumFenceTtlMs } from "./fence-ttl.ts";
import type { LateGrants } from "./late-grants.ts";
import { count, gather, leaseVerdict, majorityOf, settleWhen, tally, unavailable, type Answer } from "./gather.ts";

const isYes = (reply: Integers) => reply[0] === 1;

/** Waits for a verdict; "unknown" (failures in the way) is QuorumUnavailableError. */
async function verdictOf(what: string, calls: readonly Promise<Integers>[]): Promise<["yes" | "no", Answer<Integers>[]]> {
  const answers = await gather(calls, settleWhen(isYes, leaseVerdict, "unknown"));
  const verdict = leaseVerdict(tally(answers, isYes));
  if (verdict === "unknown") throw unavailable(what, answers, count(answers, isYes));
  return [verdict, answers];
}

/** Heartbeat and release of quorum leases. */
export function quorumLease(nodes: readonly Run[], late: LateGrants): Pick<LockBackend, "heartbeat" | "release"> {
  const majority = majorityOf(nodes.length);
  // A heartbeat's repair that comes after the release must not take the lock again.
  const released = new WeakSet<HeldLease>();
  return {
    async heartbeat(lease, leaseMs) {
      const args = [lease.owner, lease.fence, leaseMs, quorumFenceTtlMs(leaseMs)];
      const calls = nodes.map((run) => run(scripts.heartbeat, lease.name, args, lease.owner));
      const [verdict, answers] = await verdictOf(`Heartbeat of "${lease.name}"`, calls);
      if (verdict === "no") return null;
      void repairOnceSettled(nodes, calls, lease, leaseMs, majority, () => released.has(lease));
      // Held while a majority holds it: the majority-th longest TTL.
      return answers.flatMap((a) => (a && "reply" in a && isYes(a.reply) ? [a.reply[1]] : [])).sort((a, b) => b - a)[majority - 1]!;
    },
    async release(lease, requestId) {
      const args = [lease.owner, lease.fence, requestId, RETRY_WINDOW_MS];
      released.add(lease);
      // The slower nodes release too, after the caller has its outcome.
      const calls = nodes.map((run) => run(scripts.release, lease.name, args, lease.owner, lease.fence));
      late.released(lease.owner, lease.fence, calls);
      const [verdict] = await verdictOf(`Release of "${lease.name}"`, calls);
      return verdict === "yes" ? "released" : "expired";
    },
  };
}

/**
 * Once every node has answered, repairs each that said no or counts fewer holds than the lease's: what a
 * majority counts if all said yes, else the highest, as too few would free the lock under a valid lease.
 * Cases: hold-counts.test.ts ("a release lost on one node does not raise the others' holds…" and two more).
 */
async function repairOnceSettled(nodes: readonly Run[], calls: readonly Promise<Integers>[], lease: HeldLease, leaseMs: number, majority: number, released: () => boolean) {
  const replies = (await Promise.allSettled(calls)).map((settled) => (settled.status === "fulfilled" ? settled.value : undefined));
  if (released()) return;
  const counts = replies.flatMap((reply) => (reply && isYes(reply) ? [reply[2]] : [])).sort((a, b) => b - a);
  const holds = Math.max(1, counts.length === nodes.length ? counts[majority - 1]! : counts[0] ?? 0);
  replies.forEach((reply, node) => reply && !(isYes(reply) && reply[2] >= holds) && repair(nodes[node]!, lease, leaseMs, holds, released));
}

/**
 * Takes the lease again on a node that lost it, so it keeps a majority if another node fails. Safe: a
 * majority holds it meanwhile, and the node mints its own fence first, so its last fence never goes back.
 */
function repair(run: Run, lease: HeldLease, leaseMs: number, holds: number, released: () => boolean): void {
  const ticket = newToken();
  const fenceTtlMs = quorumFenceTtlMs(leaseMs);
  // Proposed: a node that knows no higher fence mints the lease's own.
  run(scripts.acquire, lease.name, [lease.owner, ticket, leaseMs, fenceTtlMs, 0, lease.fence], lease.owner)
    .then(async ([granted, minted, counted]) => {
      if (granted !== 1) return;
      // Released while the repair was out: what it took goes back.
      if (released()) return void (await run(scripts.leave, lease.name, [ticket], ""));
      // It joined a hold this node kept for the owner under another fence: adopt gives that hold the
      // lease's fence and holds, and leave takes back the one this join added. A hold the node may
      // not give the lease's fence (it came too late, see adopt.lua) is taken back too.
      const joined = counted > 1;
      const target = joined ? holds + 1 : holds;
      const adopt = () => run(scripts.adopt, lease.name, [lease.owner, ticket, minted, lease.fence, fenceTtlMs, target], lease.owner);
      const [adopted] = minted !== lease.fence || counted < target ? await adopt() : [1];
      if (joined || adopted !== 1) await run(scripts.leave, lease.name, [ticket], "");
    })
    .catch(() => undefined);
}
