import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import { round, type Summary } from "../harness/stats.ts";
import { progress } from "../harness/timing.ts";
import { runContention, type ContentionRun } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics } from "./metrics.ts";

export interface ScalingPlan {
  cellMs: number;
  names: number[];
  /** Clients in the distinct-names cells. */
  namesClients: number;
  contenders: number[];
  holdMs: number;
}

export interface ScalingCell {
  library: string;
  axis: "names" | "contenders";
  names: number;
  clients: number;
  opsPerSec: number;
  requestsPerOp: number;
  waitMs: Summary;
  starvation: number;
  requestsPerWaiterPerSec: number;
  /** Single-name cells only: handoffs to a client that was waiting. */
  gapP50Ms: number | null;
  changedHands: number | null;
  /** Single-name cells only: clients that never held the lock in the cell. */
  neverHeld: number | null;
  /** Single-name cells only: a holder's acquire() resolved before the previous holder called release(). */
  overlaps: number | null;
}

/**
 * Throughput over distinct names for `namesLibraries`, and over contenders on one name for
 * `contenderLibraries`, each cell in turn for every library so that a slow spell lands on all.
 */
export async function runScaling(
  namesLibraries: Library[],
  contenderLibraries: Library[],
  plan: ScalingPlan,
  stats: RedisStats,
): Promise<ScalingCell[]> {
  const cells: ScalingCell[] = [];
  for (const names of plan.names) {
    for (const library of namesLibraries) {
      progress(`scaling: ${library.label}, ${names} names, ${plan.namesClients} clients`);
      let next = 0;
      const pickName = () => `scale:${next++ % names}`;
      const run = await runContention(library, { clients: plan.namesClients, durationMs: plan.cellMs, holdMs: 0, rejoin: "immediate", pickName }, stats);
      cells.push(cell(library, "names", names, run));
    }
  }
  for (const clients of plan.contenders) {
    for (const library of contenderLibraries) {
      progress(`scaling: ${library.label}, 1 name, ${clients} contenders`);
      const run = await runContention(
        library, { clients, durationMs: plan.cellMs, holdMs: plan.holdMs, rejoin: "after-handoff", pickName: () => `scale:one:${clients}` }, stats);
      cells.push(cell(library, "contenders", 1, run));
    }
  }
  return cells;
}

function cell(library: Library, axis: ScalingCell["axis"], names: number, run: ContentionRun): ScalingCell {
  const throughput = throughputMetrics([run]);
  const waits = waitMetrics([run]);
  const gaps = gapMetrics([run]);
  const requests = run.sections.reduce((sum, s) => sum + s.requests + s.releaseRequests, 0) +
    run.censored.reduce((sum, c) => sum + c.requests, 0);
  return {
    library: library.label, axis, names, clients: run.plan.clients,
    opsPerSec: throughput.sectionsPerSec,
    requestsPerOp: round(requests / Math.max(1, run.sections.length)),
    waitMs: waits.waitMs,
    starvation: waits.starvation,
    requestsPerWaiterPerSec: waits.requestsPerWaiterPerSec.max,
    gapP50Ms: axis === "contenders" ? gaps.toWaiterGapMs.p50 : null,
    changedHands: axis === "contenders" ? gaps.changedHands : null,
    neverHeld: axis === "contenders" ? run.plan.clients - new Set(run.sections.map((s) => s.client)).size : null,
    overlaps: axis === "contenders" ? gaps.overlaps : null,
  };
}
