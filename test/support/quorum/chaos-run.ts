// One seed's quorum chaos run: the single-node chaos programs (test/support/chaos), their lock sets
// over three nodes, each node behind a misbehaving network of its own.
import { inject } from "vitest";
import { createLocks, type Locks } from "../../../src/index.ts";
import { newActor, type Run } from "../chaos/actor.ts";
import { CallChecks } from "../chaos/call-checks.ts";
import { sampleMutualExclusionEvery5ms } from "../chaos/check-mutual-exclusion.ts";
import { Dice } from "../chaos/dice.ts";
import type { NetStats } from "../chaos/faulty-network.ts";
import { History } from "../chaos/history.ts";
import { runProgram } from "../chaos/program.ts";
import { withFetch } from "../fetch-wrappers.ts";
import { until } from "../until.ts";
import { installClientClocks, withClientClock } from "./chaos-client-clock.ts";
import { startQuorumNemesis } from "./chaos-nemesis.ts";
import { NodeNetworks } from "./chaos-network.ts";
import type { ChaosNodes } from "./chaos-nodes.ts";
import { describeQuorumPlan, drawQuorumPlan, worstFaults, type QuorumChaosPlan } from "./chaos-plan.ts";

// Long enough for a client's retry (10 ms backoff) of a request the network lost to go out.
const QUIET_MS = 100;

export interface QuorumChaosRun {
  plan: QuorumChaosPlan;
  history: History;
  calls: number;
  /** When the last program ended (performance.now()). */
  lastCallAt: number;
  netStats: NetStats;
  /** A lock set over the nodes, on the real network, for the checks afterwards. */
  observer: Locks;
}

/**
 * All actors' random programs at once, each in its own client clock, over the nodes' networks,
 * with the nemesis if the plan has one. It ends once the healed networks have let every request
 * they held back land, so that the checks afterwards see the state the run left behind.
 */
export async function runQuorumChaos(seed: number, nodes: ChaosNodes): Promise<QuorumChaosRun> {
  const dice = new Dice(seed * 7919 + 17);
  const plan = drawQuorumPlan(seed, dice);
  const history = new History();
  history.record(describeQuorumPlan(plan));
  const run: Run = { plan, dice, history, calls: new CallChecks(plan.timeoutMs, history), lockRedis: () => nodes.clients(), pollOnly: true };
  const network = new NodeNetworks([...nodes.urls, inject("upstash").url], [...plan.nodeFaults, plan.faults], (line) => history.record(line));
  const stopSampling = sampleMutualExclusionEvery5ms(history, plan.names);
  const nemesis = plan.nemesis ? startQuorumNemesis(plan, nodes, dice, history) : undefined;
  const restoreClocks = installClientClocks();
  let lastCallAt: number;
  try {
    lastCallAt = await withFetch(network.wrap, async () => {
      const actors = Array.from({ length: plan.actors }, (_, id) => newActor(run, id));
      await Promise.all(actors.map((actor) => withClientClock(plan.clientAheadMs[actor.id] ?? 0, () => runProgram(actor))));
      const programsEndedAt = performance.now();
      network.heal();
      await landLateRequests(network, plan, history);
      return programsEndedAt;
    });
  } finally {
    restoreClocks();
    stopSampling();
    await nemesis?.stop();
  }
  const observer = createLocks({ redis: nodes.clients({ retries: 1, backoff: () => 10 }), prefix: plan.prefix, timeoutMs: 5_000 });
  return { plan, history, calls: run.calls.count, lastCallAt, netStats: network.stats, observer };
}

/** Waits until no network holds a request back any more; a violation if that never happens. */
async function landLateRequests(network: NodeNetworks, plan: QuorumChaosPlan, history: History): Promise<void> {
  const faults = worstFaults(plan);
  // Held back at most longMs and a delay each way; 2 s to spare.
  const withinMs = 2 * (faults.longMs + faults.maxDelayMs) + 2_000;
  try {
    await until(async () => network.quietForMs() >= QUIET_MS, withinMs);
    history.record("net quiet");
  } catch {
    history.violation(`hang: requests still out ${withinMs} ms after the last call`);
  }
}
