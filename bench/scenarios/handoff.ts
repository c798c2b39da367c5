import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import { progress } from "../harness/timing.ts";
import { runContention, type Rejoin } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics, type GapMetrics, type ThroughputMetrics, type WaitMetrics } from "./metrics.ts";

export interface HandoffPlan {
  clients: number;
  durationMs: number;
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

/** `clients` clients compete for ONE name, each holding it `holdMs`, then rejoining as `rejoin` says. */
export async function runHandoff(
  entries: Array<Library | Unavailable>,
  plan: HandoffPlan,
  rejoin: Rejoin,
  stats: RedisStats,
): Promise<HandoffRow[]> {
  const rows: HandoffRow[] = [];
  for (const entry of entries) {
    if ("note" in entry) {
      rows.push({ id: entry.library.id, label: entry.library.label, available: false, note: entry.note });
      continue;
    }
    progress(`handoff (${rejoin} rejoin): ${entry.label}, ${plan.clients} clients, ${plan.durationMs / 1000} s`);
    const run = await runContention(entry, { ...plan, rejoin, pickName: () => `handoff-${rejoin}` }, stats);
    rows.push({ id: entry.id, label: entry.label, available: true, ...throughputMetrics(run), ...waitMetrics(run), ...gapMetrics(run) });
  }
  return rows;
}
