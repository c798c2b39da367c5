import { uniquePrefix } from "../upstash.ts";
import type { Dice } from "./dice.ts";
import type { Faults } from "./faulty-network.ts";

const LOCK_NAMES = ["a", "b", "c"];
/** The longest lease any lock set or call asks for: short, so leases lapse mid-work. */
export const MAX_LEASE_MS = 900;

/** What one seed's run is made of, before any actor's program is drawn. */
export interface ChaosPlan {
  seed: number;
  /** Every lock set's and store's; a short one lets delayed requests land after the call gave up. */
  timeoutMs: number;
  faults: Faults;
  actors: number;
  /** Fewer names, more contention. */
  names: string[];
  /**
   * Deletes lock keys now and then, as a failover or restart losing them would: mutual exclusion
   * is then the fence's to keep, and the checks that rest on the lease alone are waived around it.
   */
  nemesis: boolean;
  /** The stores' ttlMs (an idle record expires); 0 for none. */
  storeTtlMs: number;
  prefix: string;
}

export function drawPlan(seed: number, dice: Dice): ChaosPlan {
  const timeoutMs = dice.pick([2_000, 2_000, 400, 250]);
  const faults: Faults = {
    seed: seed * 31 + 5,
    dropRequestPm: dice.int(0, 60),
    dropReplyPm: dice.int(0, 150),
    duplicatePm: dice.int(0, 60),
    maxDelayMs: dice.int(0, 100),
    longPm: dice.int(0, 30),
    longMs: timeoutMs + dice.int(0, 300),
  };
  return {
    seed,
    timeoutMs,
    faults,
    actors: dice.int(3, 5),
    names: LOCK_NAMES.slice(0, dice.int(1, LOCK_NAMES.length)),
    nemesis: dice.chance(0.25),
    // ttlMs less τ (1 s) is how long a holder may write to an expired record.
    storeTtlMs: dice.chance(0.25) ? dice.int(2_500, 5_000) : 0,
    prefix: uniquePrefix(`chaos${seed}`),
  };
}

export function describePlan(plan: ChaosPlan): string {
  return `seed ${plan.seed}: ${plan.actors} actors on ${plan.names.join(",")}, timeoutMs ${plan.timeoutMs}, ` +
    `nemesis ${plan.nemesis}, store ttlMs ${plan.storeTtlMs}, faults ${JSON.stringify(plan.faults)}`;
}
