// One quorum attempt: take the lock on a majority, give it one fence there, or give it all back.
import { driftMs, type BusyAttempt, type Grant } from "../core/backend.ts";
import { QuorumUnavailableError } from "../core/errors.ts";
import { newToken } from "../core/keys.ts";
import type { Run } from "../redis/node-runner.ts";
import { unexpectedReply } from "../redis/failures.ts";
import { giveBackAfter, type Integers } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
import { quorumFenceTtlMs } from "./fence-ttl.ts";
import type { LateGrants } from "./late-grants.ts";
import { busyHint, chooseFence, grantsIn, isGrant, joinUnsettled, type NodeGrant } from "./votes.ts";
import { acquireVerdict, count, failuresOf, gather, majorityOf, settleWhen, tally, unavailable, type Answer } from "./gather.ts";

/**
 * Raises `node`'s last fence to the lease's; where the node granted this attempt `minted`, its hold
 * takes the lease's fence (and holds) too. adopt.lua's {1, ttlMs}, or {0, 0} where it holds no such hold.
 */
type Adopt = (node: number, minted: number) => Promise<Integers>;

/**
 * attempt(name, owner, leaseMs): the lock on a majority with one fence, or what the nodes said.
 * The fence is the highest any granting node minted, written back to a majority before the lease
 * is returned: every later majority includes one of those nodes, which mints above it.
 */
export function quorumAttempt(nodes: readonly Run[], late: LateGrants) {
  const majority = majorityOf(nodes.length);

  return async function attempt(name: string, owner: string, leaseMs: number): Promise<Grant | BusyAttempt> {
    // Its own ticket: a late give-back of this attempt must not undo the next one's hold.
    const ticket = newToken();
    const fenceTtlMs = quorumFenceTtlMs(leaseMs);
    const sentAt = performance.now();
    const args = [owner, ticket, leaseMs, fenceTtlMs, 0, proposedFence()];
    const calls = nodes.map((run) => acquireOn(run, name, args, owner));
    const settled = settleWhen(isGrant, acquireVerdict, "unknown");
    const answers = await gather(calls, (so) => settled(so) && !joinUnsettled(grantsIn(so), so.filter((a) => !a).length, majority));
    const grants = grantsIn(answers);
    const verdict = acquireVerdict(tally(answers, isGrant));
    // The caller's lease may still hold a majority among the nodes not heard from: taking the lock
    // afresh would change its fence under it. Busy, until they answer or the lease lapses.
    if (verdict === "granted" && joinUnsettled(grants, answers.filter((a) => !a || "error" in a).length, majority)) {
      giveBack(nodes, calls, name, ticket);
      return { busyForMs: 0, clockBehindMs: 0, position: -1, newestFence: 0 };
    }
    if (verdict !== "granted") {
      giveBack(nodes, calls, name, ticket);
      // Busy only when a majority replied: otherwise the lock may well be free.
      if (verdict === "unknown") throw unavailable(`Lock "${name}"`, answers, grants.length);
      return busyHint(answers, majority);
    }
    const fence = chooseFence(grants, majority);
    // A reentrant call's holds, which the nodes that serve it afresh must count too.
    const holds = Math.max(1, ...grants.filter((g) => g.fence === fence).map((g) => g.holds));
    const adopt = (node: number, minted: number) => nodes[node]!(scripts.adopt, name, [owner, ticket, minted, fence, fenceTtlMs, holds], owner);
    const carrying = await writeBack(name, ticket, fence, holds, grants, calls, adopt);
    carryFence(name, ticket, owner, fence, holds, calls, answers, adopt);
    // The lease holds while a majority of its nodes do; their TTLs ran from sentAt at the latest.
    const ttlMs = carrying.map((g) => g.ttlMs).sort((a, b) => b - a)[majority - 1];
    const validUntil = ttlMs === undefined ? 0 : sentAt + ttlMs - driftMs(ttlMs);
    if (validUntil - performance.now() >= leaseMs / 10) return { fence, validUntil };
    // Only this attempt's holds, by its ticket: a lease it joined keeps its own.
    giveBack(nodes, calls, name, ticket);
    return { busyForMs: -1, clockBehindMs: 0, position: -1, newestFence: fence };
  };

  /**
   * Gives the lease's fence and holds to the granting nodes that lack them; resolves with the nodes
   * that carry them once they are a majority (or fewer, once every node has answered).
   */
  async function writeBack(name: string, ticket: string, fence: number, holds: number, grants: NodeGrant[], calls: Promise<Integers>[], adopt: Adopt) {
    const carries = (g: NodeGrant) => g.fence === fence && g.holds >= holds;
    const carrying = grants.filter(carries);
    const others = grants.filter((g) => !carries(g));
    if (!others.length) return carrying;
    // Sent to all of them even when enough carry it: a node with another fence fails every heartbeat.
    const adopts = others.map((g) => adoptOrGiveBack(name, ticket, g.node, g.fence, adopt));
    const answers = await gather(adopts, (so) => carrying.length + count(so, isGrant) >= majority);
    const adopted = others.filter((_, i) => {
      const answer = answers[i];
      return answer && "reply" in answer && isGrant(answer.reply);
    });
    // Too few, and failures among them: the outcome of the write-back is unknown. Without failures
    // the holds lapsed meanwhile, and the caller finds the attempt too late.
    if (carrying.length + adopted.length < majority && answers.some((a) => a && "error" in a)) {
      giveBack(nodes, calls, name, ticket);
      const carried = carrying.length + adopted.length;
      const heard = carrying.length + count(answers);
      throw new QuorumUnavailableError(`Lock "${name}" (writing its fence back)`, nodes.length, heard, carried, failuresOf(answers, others.map((g) => g.node)));
    }
    return [...carrying, ...adopted];
  }

  /**
   * Carries the fence to the nodes the write-back skipped: busy ones, and late grants, which join the lease
   * or go back if it was released. Not awaited: the majority that carries it keeps fences from going back.
   */
  function carryFence(name: string, ticket: string, owner: string, fence: number, holds: number, calls: Promise<Integers>[], answers: Answer<Integers>[], adopt: Adopt) {
    calls.forEach((call, node) => {
      const answer = answers[node];
      if (answer && "reply" in answer) {
        if (!isGrant(answer.reply)) adopt(node, 0).catch(() => undefined);
        return;
      }
      // A node whose reply failed or could not be read, before the vote or after, may have granted,
      // maybe with a fence no release of the lease would match: that hold goes back.
      const giveBackHere = (error: unknown) => giveBackAfter(error, () => nodes[node]!(scripts.leave, name, [ticket], "")).catch(() => undefined);
      if (answer) return void giveBackHere(answer.error);
      call.catch(giveBackHere);
      late.track(owner, fence, node, call, ([granted, minted, counted], giveBack) => {
        if (granted !== 1) return adopt(node, 0);
        // Released: kept with its own fence where it may stand in for a join's hold, until its TTL.
        if (giveBack !== undefined) return giveBack ? nodes[node]!(scripts.leave, name, [ticket], "") : Promise.resolve();
        return minted === fence && counted >= holds ? Promise.resolve() : adoptOrGiveBack(name, ticket, node, minted, adopt);
      });
    });
  }

  /**
   * Gives the hold this attempt took on `node` the lease's fence; a hold the node may not give it
   * (one minted after the node heard of a later fence, see adopt.lua) goes back.
   */
  function adoptOrGiveBack(name: string, ticket: string, node: number, minted: number, adopt: Adopt): Promise<Integers> {
    const adopting = adopt(node, minted);
    const leaveUnlessAdopted = async ([adopted]: Integers) => void (adopted === 1 || (await nodes[node]!(scripts.leave, name, [ticket], "")));
    adopting.then(leaveUnlessAdopted).catch(() => undefined);
    return adopting;
  }
}

async function acquireOn(run: Run, name: string, args: (string | number)[], owner: string): Promise<Integers> {
  const reply = await run(scripts.acquire, name, args, owner);
  // Only data under the prefix that is not fencelock's could hold such a fence.
  if (isGrant(reply) && reply[1] <= 0) throw unexpectedReply(scripts.acquire, reply);
  return reply;
}

/**
 * This client's clock in µs, proposed to every node so that a majority usually mints the same fence
 * and needs no write-back. Date.now() too: a runtime may count performance.now() from 0.
 */
function proposedFence(): number {
  return Math.floor(Math.max(Date.now(), performance.timeOrigin + performance.now()) * 1000);
}

/**
 * Gives back what this attempt took on every node, busy ones too (a retried copy may grant later),
 * each once its acquire settles: a leave sent before would find nothing to give back.
 */
function giveBack(nodes: readonly Run[], calls: readonly Promise<Integers>[], name: string, ticket: string): void {
  calls.forEach((call, node) => {
    const leave = () => nodes[node]!(scripts.leave, name, [ticket], "");
    call.then(leave, (error: unknown) => giveBackAfter(error, leave)).catch(() => undefined);
  });
}
