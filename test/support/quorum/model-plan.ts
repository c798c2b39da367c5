// What one seed's model run is made of: clients (some with clocks ahead), lock names, the node
// faults the nemesis may use, and how often.
import type { Dice } from "../chaos/dice.ts";
import type { ChaosPlan } from "../chaos/plan.ts";
import { uniquePrefix } from "../upstash.ts";

export type NodeFault = "restart" | "pause" | "clock";

export interface ModelPlan extends ChaosPlan {
  /** The faults the nemesis draws from, one node at a time. */
  nodeFaults: NodeFault[];
  /** Pause between two faults, ms. */
  faultGapMs: [number, number];
  /** How far each client's clock runs ahead, ms (mostly 0). */
  clientAheadMs: number[];
  /** How many steps each client's program takes, at least and at most. */
  steps: [number, number];
}

const ALL_FAULTS: NodeFault[] = ["restart", "pause", "clock"];
/** No network faults here: the nodes misbehave, not the wires. */
const NO_NETWORK_FAULTS = { seed: 0, dropRequestPm: 0, dropReplyPm: 0, duplicatePm: 0, maxDelayMs: 0, longPm: 0, longMs: 0 };

/** `clockFaults`: false where the clock shim could not be built. */
export function drawModelPlan(seed: number, dice: Dice, clockFaults: boolean, steps: [number, number] = [14, 24]): ModelPlan {
  const clients = dice.int(3, 5);
  const skewed = dice.chance(0.5);
  const kinds = ALL_FAULTS.filter((kind) => (kind !== "clock" || clockFaults) && dice.chance(0.8));
  return {
    seed,
    timeoutMs: dice.pick([200, 300, 500]),
    faults: NO_NETWORK_FAULTS,
    actors: clients,
    names: ["m", "n"].slice(0, dice.int(1, 2)),
    nemesis: false,
    storeTtlMs: 0,
    prefix: uniquePrefix(`qmodel${seed}`),
    nodeFaults: kinds.length ? kinds : ["pause"],
    faultGapMs: dice.pick([[50, 400], [200, 900]] as [number, number][]),
    clientAheadMs: Array.from({ length: clients }, () => (skewed && dice.chance(0.4) ? dice.pick([300, 2_000, 30_000, 600_000]) : 0)),
    steps,
  };
}

export function describeModelPlan(plan: ModelPlan): string {
  const ahead = plan.clientAheadMs.some(Boolean) ? `, clocks ahead ${plan.clientAheadMs.join("/")} ms` : "";
  return `model seed ${plan.seed}: ${plan.actors} clients on ${plan.names.join(",")}, timeoutMs ${plan.timeoutMs}, ` +
    `node faults ${plan.nodeFaults.join("+")} every ${plan.faultGapMs.join("-")} ms${ahead}`;
}
