// What one seed's quorum chaos run is made of: the single-node plan (actors, names, timeoutMs, the
// store's network and ttlMs, whether a nemesis runs), plus a network of its own in front of each
// node, and clients whose clocks run ahead.
import type { Dice } from "../chaos/dice.ts";
import type { Faults } from "../chaos/faulty-network.ts";
import { describePlan, drawPlan, type ChaosPlan } from "../chaos/plan.ts";
import { uniquePrefix } from "../upstash.ts";

export const NODES = 3;

export interface QuorumChaosPlan extends ChaosPlan {
  /** Each node's network, in node order (`faults` is the fenced store's). */
  nodeFaults: Faults[];
  /** How far each actor's clock runs ahead, ms (mostly 0): the fence it proposes runs ahead as far. */
  clientAheadMs: number[];
  /**
   * With `nemesis`: whether it also deletes a node's fence counter. Only where no client's clock
   * runs ahead: then the fence order rests on nodes remembering fences (docs/guarantees.md#quorum-mode),
   * while with true clocks the proposal's time floor keeps it even so.
   */
  nemesisDeletesFences: boolean;
}

export function drawQuorumPlan(seed: number, dice: Dice): QuorumChaosPlan {
  const base = drawPlan(seed, dice);
  const nodeFaults = Array.from({ length: NODES }, (_, i) => drawNodeFaults(seed * 131 + 7 * i + 3, base.timeoutMs, dice));
  const skewed = dice.chance(0.5);
  const clientAheadMs = Array.from({ length: base.actors }, () =>
    skewed && dice.chance(0.4) ? dice.pick([1_500, 20_000, 300_000, 1_200_000]) : 0);
  return {
    ...base,
    prefix: uniquePrefix(`qchaos${seed}`),
    nodeFaults,
    clientAheadMs,
    nemesisDeletesFences: clientAheadMs.every((ms) => ms === 0),
  };
}

/** As the single-node plan draws its network, a little kinder: every call meets three of them. */
function drawNodeFaults(seed: number, timeoutMs: number, dice: Dice): Faults {
  return {
    seed,
    dropRequestPm: dice.int(0, 50),
    dropReplyPm: dice.int(0, 100),
    duplicatePm: dice.int(0, 60),
    maxDelayMs: dice.int(0, 80),
    longPm: dice.int(0, 25),
    longMs: timeoutMs + dice.int(0, 300),
  };
}

/** The worst of every network: what bounds how late a held-back request may land. */
export function worstFaults(plan: QuorumChaosPlan): Faults {
  const all = [plan.faults, ...plan.nodeFaults];
  return {
    ...plan.faults,
    maxDelayMs: Math.max(...all.map((f) => f.maxDelayMs)),
    longMs: Math.max(...all.map((f) => f.longMs)),
  };
}

export function describeQuorumPlan(plan: QuorumChaosPlan): string {
  const nets = plan.nodeFaults.map((f, i) => `n${i} ${JSON.stringify({ ...f, seed: undefined })}`).join("; ");
  const ahead = plan.clientAheadMs.some(Boolean) ? `, clocks ahead ${plan.clientAheadMs.join("/")} ms` : "";
  return `quorum ${describePlan(plan)}${ahead}, nemesis deletes fences ${plan.nemesis && plan.nemesisDeletesFences}; nodes: ${nets}`;
}
