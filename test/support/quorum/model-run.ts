// One seed's model run: clients over three nodes, the node nemesis, and what the checks need.
import { createLocks, type Locks } from "../../../src/index.ts";
import { newActor, type Run } from "../chaos/actor.ts";
import { CallChecks } from "../chaos/call-checks.ts";
import { sampleMutualExclusionEvery5ms } from "../chaos/check-mutual-exclusion.ts";
import { Dice } from "../chaos/dice.ts";
import { History, type ReceivedLease } from "../chaos/history.ts";
import { installClientClocks, withClientClock } from "./chaos-client-clock.ts";
import { carriersKept, describeCarriers, probeCarriers, type CarrierProbe } from "./model-carriers.ts";
import { startNodeNemesis, type NodeEvent } from "./model-nemesis.ts";
import type { ModelNodes } from "./model-nodes.ts";
import { describeModelPlan, drawModelPlan, type ModelPlan } from "./model-plan.ts";
import { nodeLog } from "./model-node-log.ts";
import { runModelProgram } from "./model-program.ts";
import { withFetch } from "../fetch-wrappers.ts";
import type { Premise } from "./chaos-checks.ts";

export interface ModelRun {
  plan: ModelPlan;
  history: History;
  calls: number;
  lastCallAt: number;
  events: NodeEvent[];
  faults: Record<string, number>;
  /**
   * Whether the fence argument covers a pair of leases. With every client's clock true, always:
   * the proposed fence (the caller's clock) alone then puts a later call's fence above an earlier
   * lease's, whatever the nodes lost. With clocks ahead, only where a majority kept the fence.
   */
  premise: Premise;
  /** Why the premise holds or not, for a report. */
  explain: (x: ReceivedLease, y: ReceivedLease) => string;
  /** Whether some client's clock ran ahead. */
  skewed: boolean;
  /** A lock set over the nodes, for the liveness check afterwards. */
  observer: Locks;
}

/** `steps`: how many steps each client takes, at least and at most (default 14 to 24). */
export async function runModel(seed: number, nodes: ModelNodes, steps?: [number, number]): Promise<ModelRun> {
  const dice = new Dice(seed * 6271 + 11);
  const plan = drawModelPlan(seed, dice, nodes.clockFaults, steps);
  const history = new History();
  history.record(describeModelPlan(plan));
  const run: Run = { plan, dice, history, calls: new CallChecks(plan.timeoutMs, history), lockRedis: () => nodes.clients(), pollOnly: true };
  const probes = new Map<ReceivedLease, Promise<CarrierProbe>>();
  const probeNew = async () => {
    for (const held of history.leases) if (!probes.has(held)) probes.set(held, probeCarriers(nodes, plan.prefix, held));
    await Promise.all(probes.values());
  };
  const stopSampling = sampleMutualExclusionEvery5ms(history, plan.names);
  // Dice of its own: the faults drawn do not depend on how the clients' calls interleave.
  const nemesis = startNodeNemesis(plan, nodes, new Dice(seed * 4099 + 5), history);
  const restoreClocks = installClientClocks();
  let lastCallAt: number;
  try {
    const actors = Array.from({ length: plan.actors }, (_, id) => newActor(run, id));
    // Each node's requests and replies go into the trace, printed when the run fails.
    lastCallAt = await withFetch(await nodeLog(nodes, history), async () => {
      await Promise.all(actors.map((actor) => withClientClock(plan.clientAheadMs[actor.id] ?? 0, () => runModelProgram(actor, plan.steps, probeNew))));
      return performance.now();
    });
  } finally {
    restoreClocks();
    stopSampling();
    await nemesis.stop();
  }
  history.record(`nemesis stopped: ${JSON.stringify(nemesis.counts)}`);
  const probed = new Map<ReceivedLease, CarrierProbe>();
  for (const [held, probe] of probes) probed.set(held, await probe);
  const skewed = plan.clientAheadMs.some(Boolean);
  const premise: Premise = (x, y) => !skewed || carriersKept(probed.get(x), y, nemesis.events, nodes.nodes.length);
  const explain = (x: ReceivedLease, y: ReceivedLease) => describeCarriers(probed.get(x), y, nemesis.events, (at) => history.ms(at));
  const observer = createLocks({ redis: nodes.clients(), prefix: plan.prefix, timeoutMs: 5_000 });
  return { plan, history, calls: run.calls.count, lastCallAt, events: nemesis.events, faults: nemesis.counts, premise, explain, skewed, observer };
}
