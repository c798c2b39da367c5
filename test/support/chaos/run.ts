import { withFetch } from "../fetch-wrappers.ts";
import { until } from "../until.ts";
import { newActor, type Run } from "./actor.ts";
import { CallChecks } from "./call-checks.ts";
import { sampleMutualExclusionEvery5ms } from "./check-mutual-exclusion.ts";
import { Dice } from "./dice.ts";
import { FaultyNetwork, type Faults, type NetStats } from "./faulty-network.ts";
import { History } from "./history.ts";
import { startNemesis } from "./nemesis.ts";
import { describePlan, drawPlan, type ChaosPlan } from "./plan.ts";
import { runProgram } from "./program.ts";

// Long enough for a client's retry (10 ms backoff) of a request the network lost to go out.
const QUIET_MS = 100;

export interface ChaosRun {
  plan: ChaosPlan;
  /** What happened, with the violations found while it ran. */
  history: History;
  calls: number;
  /** When the last program ended (performance.now()). */
  lastCallAt: number;
  netStats: NetStats;
}

/**
 * One seed's run: all actors' random programs at once over the faulty network, with the nemesis
 * if the plan has one, sampling mutual exclusion as they go. It ends once the healed network has
 * let the last request it held back land, so that the checks afterwards see the state the run
 * left behind, and cannot fail on the network.
 */
export async function runChaos(seed: number): Promise<ChaosRun> {
  const dice = new Dice(seed * 7919 + 17);
  const plan = drawPlan(seed, dice);
  const history = new History();
  history.record(describePlan(plan));
  const run: Run = { plan, dice, history, calls: new CallChecks(plan.timeoutMs, history) };
  const network = new FaultyNetwork(plan.faults, (line) => history.record(line));
  const stopSampling = sampleMutualExclusionEvery5ms(history, plan.names);
  const nemesis = plan.nemesis ? startNemesis(plan, dice, history) : undefined;
  let lastCallAt: number;
  try {
    lastCallAt = await withFetch(network.wrap, async () => {
      await Promise.all(Array.from({ length: plan.actors }, (_, id) => runProgram(newActor(run, id))));
      const programsEndedAt = performance.now();
      network.heal();
      await landLateRequests(network, plan.faults, history);
      return programsEndedAt;
    });
  } finally {
    // Also when a program threw: neither may go on into the next seed's run.
    stopSampling();
    await nemesis?.stop();
  }
  return { plan, history, calls: run.calls.count, lastCallAt, netStats: network.stats };
}

/** Waits until the network has let every request it held back land; a violation if that never happens. */
async function landLateRequests(network: FaultyNetwork, faults: Faults, history: History): Promise<void> {
  // Held back at most longMs and a delay each way; 2 s to spare.
  const withinMs = 2 * (faults.longMs + faults.maxDelayMs) + 2_000;
  try {
    await until(async () => network.quietForMs() >= QUIET_MS, withinMs);
    history.record("net quiet");
  } catch {
    history.violation(`hang: requests still out ${withinMs} ms after the last call`);
  }
}
