// What a quorum attempt's answers say: which nodes granted, with which fence, and what a lost vote tells.
import type { BusyAttempt } from "../core/backend.ts";
import type { Integers } from "../redis/run-script.ts";
import type { Answer } from "./gather.ts";

/** A node that took the lock for this attempt: acquire.lua's {1, fence, holds, ttlMs}. */
export interface NodeGrant {
  readonly node: number;
  readonly fence: number;
  readonly holds: number;
  readonly ttlMs: number;
}

export const isGrant = (reply: Integers) => reply[0] === 1;

export function grantsIn(answers: readonly Answer<Integers>[]): NodeGrant[] {
  return answers.flatMap((a, node) => {
    if (!a || !("reply" in a) || !isGrant(a.reply)) return [];
    const [, fence, holds, ttlMs] = a.reply;
    return [{ node, fence, holds, ttlMs }];
  });
}

/** The fence most of the nodes that joined the caller's own hold answered, and on how many. */
function joinedFence(grants: readonly NodeGrant[]): [fence: number, count: number] {
  const counts = new Map<number, number>();
  for (const g of grants) if (g.holds > 1) counts.set(g.fence, (counts.get(g.fence) ?? 0) + 1);
  return [...counts].reduce<[number, number]>((best, entry) => (entry[1] > best[1] ? entry : best), [0, 0]);
}

/**
 * Nodes joined the caller's own hold, but no fence among them shows a majority yet, and the silent
 * nodes could still make one up: whether the caller's lease holds is unknown.
 */
export function joinUnsettled(grants: readonly NodeGrant[], silent: number, majority: number): boolean {
  const [, joined] = joinedFence(grants);
  return joined > 0 && joined < majority && joined + silent >= majority;
}

/**
 * The lease's fence. A reentrant call joined on a majority keeps its lease's fence, the one that
 * majority carries (a node may hold the owner's lock under another, from a grant nobody adopted);
 * otherwise the highest fence any granting node minted.
 */
export function chooseFence(grants: readonly NodeGrant[], majority: number): number {
  const [fence, joined] = joinedFence(grants);
  return joined >= majority ? fence : Math.max(...grants.map((g) => g.fence));
}

/**
 * What a lost vote tells the next attempt: how long until a majority could be free (this attempt's
 * own grants, given back, count as free). Never in line: quorum mode keeps no queue.
 */
export function busyHint(answers: readonly Answer<Integers>[], majority: number): BusyAttempt {
  const freeInMs = answers
    .map((a) => (!a || "error" in a ? Infinity : isGrant(a.reply) ? 0 : Math.max(0, a.reply[1])))
    .sort((a, b) => a - b);
  const newestFence = Math.max(0, ...answers.map((a) => (a && "reply" in a ? (isGrant(a.reply) ? a.reply[1] : a.reply[3]) : 0)));
  return { busyForMs: freeInMs[majority - 1] ?? 0, clockBehindMs: 0, position: -1, newestFence };
}
