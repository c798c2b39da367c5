import {
  fenceRegressions, overlappingHolds, recoverySeconds, staleWritesAccepted, unexpectedFailures,
  type Earlier, type Found,
} from "./checks.ts";
import type { History } from "./history.ts";

/** One line of the report: a scenario (or one step of the chain) and what its history shows. */
export interface Row {
  scenario: string;
  /** Whether the run meets the stated condition (failover gap > the new clock's lag + τ). */
  inside: boolean;
  condition: string;
  namesTried: number;
  leases: number;
  regressed: Found;
  stale: Found;
  overlaps: number;
  recoverySeconds: number | null;
  notes: string;
  /** Which counts must be 0: all of them inside the condition, what still holds outside. */
  asserts: { fences: boolean; stale: boolean };
  unexpected: string[];
  /** The faults and notable moments, with their times: FAULTS_TRACE=1 prints them. */
  events: string[];
  skipped?: string;
}

export interface Measure {
  scenario: string;
  inside: boolean;
  condition: string;
  faultAt: number;
  /** The end of this step's window for recovery (the next fault). */
  until?: number;
  /** Earlier leases this row's checks compare against (default: all). */
  earlier?: Earlier;
  asserts?: Row["asserts"];
  notes?: string;
}

/** Late writes of lost (or paused) holders, the key safety case: how many the store refused. */
function lateWriteNote(history: History, earlier: Earlier = () => true): string {
  const writes = history.writes.filter((write) => write.held.client.startsWith("lost") && earlier(write.held));
  if (!writes.length) return "";
  const refused = writes.filter((write) => write.outcome === "stale").length;
  return `their late writes: ${refused} of ${writes.length} refused`;
}

export function measure(history: History, m: Measure): Row {
  const leases = m.earlier ? history.leases.filter(m.earlier) : history.leases;
  return {
    scenario: m.scenario,
    inside: m.inside,
    condition: m.condition,
    namesTried: history.namesTried.size,
    leases: leases.length,
    regressed: fenceRegressions(history, m.earlier),
    stale: staleWritesAccepted(history, m.earlier),
    overlaps: overlappingHolds(history, m.earlier),
    recoverySeconds: recoverySeconds(history, m.faultAt, m.until),
    notes: [m.notes, lateWriteNote(history, m.earlier)].filter(Boolean).join("; "),
    asserts: m.asserts ?? { fences: m.inside, stale: m.inside },
    unexpected: unexpectedFailures(history),
    events: history.events,
  };
}

export function skippedRow(scenario: string, why: string): Row {
  const none = { count: 0, examples: [] };
  return {
    scenario, inside: false, condition: "", namesTried: 0, leases: 0, regressed: none, stale: none, overlaps: 0,
    recoverySeconds: 0, notes: "", asserts: { fences: false, stale: false }, unexpected: [], events: [], skipped: why,
  };
}

/** What is wrong with a row: the counts it asserts are 0 and are not, acquires never coming back, undocumented errors. */
export function rowProblems(row: Row): string[] {
  if (row.skipped) return [];
  const problems: string[] = [];
  if (row.asserts.fences && row.regressed.count) {
    problems.push(`${row.regressed.count} fences repeated or regressed:\n  ${row.regressed.examples.join("\n  ")}`);
  }
  if (row.asserts.stale && row.stale.count) {
    problems.push(`${row.stale.count} stale writes accepted:\n  ${row.stale.examples.join("\n  ")}`);
  }
  if (row.recoverySeconds === null) problems.push("acquires never succeeded again after the fault");
  if (row.unexpected.length) problems.push(`acquires failed with undocumented errors: ${row.unexpected.join(", ")}`);
  return problems.map((problem) => `${row.scenario}: ${problem}`);
}

/** The report as a markdown table. */
export function table(rows: Row[]): string {
  const header = ["scenario", "condition", "names tried", "leases", "fences repeated or regressed", "stale writes accepted",
    "overlapping holds (info)", "s until acquires succeed again", "notes"];
  const lines = rows.map((row) => row.skipped
    ? [row.scenario, row.skipped, "", "", "", "", "", "", ""]
    : [
      row.scenario,
      `${row.inside ? "INSIDE" : "OUTSIDE"}: ${row.condition}`,
      String(row.namesTried),
      String(row.leases),
      count(row.regressed.count, row.asserts.fences),
      count(row.stale.count, row.asserts.stale),
      String(row.overlaps),
      row.recoverySeconds === null ? "never" : row.recoverySeconds.toFixed(1),
      row.notes,
    ]);
  return [header, header.map(() => "---"), ...lines].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** A count, marked when it is asserted to be 0. */
function count(n: number, asserted: boolean): string {
  return asserted ? `${n} (must be 0)` : String(n);
}
