import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import { shuffled } from "../harness/stats.ts";
import { collectGarbage, progress } from "../harness/timing.ts";
import { runContention, type ContentionRun, type Rejoin } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics, type GapMetrics, type ThroughputMetrics, type WaitMetrics } from "./metrics.ts";

export interface HandoffPlan {
  clients: number;
  /** Per library, split evenly over the rounds. */
  durationMs: number;
  /** Each round runs every library once, in a random order of its own. */
  rounds: number;
  holdMs: number;
}

export type HandoffRow =
  | ({ id: string; label: string; available: true } & ThroughputMetrics & WaitMetrics & GapMetrics)
  | { id: string; label: string; available: false; note: string };

/** A library that cannot be measured in this run, and why. */
export interface Unavailable {
  library: Library;
  note: string;
}

/**
 * `clients` clients compete for ONE name, each holding it `holdMs`, then rejoining as `rejoin`
 * says. The libraries take turns in rounds, so that a slow spell of the machine (its speed
 * changes by the minute) lands on all of them rather than on whichever ran then.
 */
export async function runHandoff(
  entries: Array<Library | Unavailable>,
  plan: HandoffPlan,
  rejoin: Rejoin,
  stats: RedisStats,
): Promise<HandoffRow[]> {
  const measured = entries.filter((entry): entry is Library => !("note" in entry));
  const runs = new Map<Library, ContentionRun[]>(measured.map((library) => [library, []]));
  const durationMs = plan.durationMs / plan.rounds;
  for (let round = 0; round < plan.rounds; round++) {
    for (const [turn, library] of shuffled(measured).entries()) {
      progress(`handoff (${rejoin} rejoin): round ${round + 1} of ${plan.rounds}, ${library.label} (${turn + 1} of ${measured.length}), ` +
        `${plan.clients} clients, ${durationMs / 1000} s`);
      // No library starts with the garbage of the one before it.
      collectGarbage();
      const run = await runContention(library, { ...plan, durationMs, rejoin, pickName: () => `handoff-${rejoin}` }, stats);
      runs.get(library)?.push(run);
    }
  }
  return entries.map((entry) => {
    if ("note" in entry) return { id: entry.library.id, label: entry.library.label, available: false, note: entry.note };
    const mine = runs.get(entry) ?? [];
    return { id: entry.id, label: entry.label, available: true, ...throughputMetrics(mine), ...waitMetrics(mine), ...gapMetrics(mine) };
  });
}

