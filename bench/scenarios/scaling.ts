import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import { round, shuffled, type Summary } from "../harness/stats.ts";
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
    const first = namesLibraries[0];
    // The libraries share a prefix, so one pass leaves every name's records in Redis for all.
    if (first && names > 1) await takeEach(first, names, plan.namesClients);
    for (const library of shuffled(namesLibraries)) {
      progress(`scaling: ${library.label}, ${names} names, ${plan.namesClients} clients`);
      // At random: a cell is too short to go round 10,000 names, and each pick must be one of all N.
      const pickName = () => nameOf(names, Math.floor(Math.random() * names));
      const run = await runContention(library, { clients: plan.namesClients, durationMs: plan.cellMs, holdMs: 0, rejoin: "immediate", pickName }, stats);
      cells.push(cell(library, "names", names, run));
    }
  }
  for (const clients of plan.contenders) {
    for (const library of shuffled(contenderLibraries)) {
      progress(`scaling: ${library.label}, 1 name, ${clients} contenders`);
      const run = await runContention(
        library, { clients, durationMs: plan.cellMs, holdMs: plan.holdMs, rejoin: "after-handoff", pickName: () => `scale:one:${clients}` }, stats);
      cells.push(cell(library, "contenders", 1, run));
    }
  }
  return cells;
}

const nameOf = (names: number, i: number) => `scale:${names}:${i}`;

/** Takes and releases each of the N names once, untimed, so that every one is in play in the cell. */
async function takeEach(library: Library, names: number, clients: number): Promise<void> {
  progress(`scaling: ${library.label}, taking each of ${names} names once (untimed)`);
  let next = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    const adapter = await library.connect();
    try {
      for (let i = next++; i < names; i = next++) await adapter.release(await adapter.acquire(nameOf(names, i)));
    } finally {
      await adapter.close();
    }
  }));
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
