import type { Form } from "./forms.ts";
import { rowProblems, table, type Row } from "./row.ts";
import { chain, clockStepBack, failoverToShiftedClock } from "./scenarios-clock.ts";
import { failoverLostWrites, flushall, restartEmpty, sigstop, splitBrain } from "./scenarios-data.ts";

export interface Scenario {
  id: string;
  /** Part of the short form that `npm test` runs. */
  short: boolean;
  run(form: Form): Promise<Row[]>;
}

/** Every nemesis, in the order the report lists them. */
export const SCENARIOS: Scenario[] = [
  { id: "failover-lost-writes", short: true, run: failoverLostWrites },
  { id: "sigstop", short: false, run: sigstop },
  { id: "restart-empty", short: false, run: restartEmpty },
  { id: "flushall", short: true, run: flushall },
  { id: "split-brain", short: false, run: splitBrain },
  { id: "clock-ahead", short: false, run: (form) => failoverToShiftedClock(form, form.aheadMs, form.gapMs) },
  // Inside: a gap of 3.5 s exceeds a 1 s lag + τ by 1.5 s. Outside: a 6 s lag exceeds the gap.
  { id: "clock-behind-inside", short: false, run: (form) => failoverToShiftedClock(form, -1_000, 3_500) },
  { id: "clock-behind-outside", short: false, run: (form) => failoverToShiftedClock(form, -6_000, form.gapMs) },
  { id: "clock-step-back", short: true, run: clockStepBack },
  { id: "chain", short: true, run: chain },
];

/** Runs scenarios one after another (each would disturb the others' timing), logging each as it ends. */
export async function runScenarios(form: Form, scenarios: Scenario[], log = console.log): Promise<Row[]> {
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    const started = performance.now();
    const got = await scenario.run(form);
    rows.push(...got);
    log(`faults: ${scenario.id} (${form.label}) took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return rows;
}

/** The table and, below it, every problem found (empty when none). */
export function report(rows: Row[]): { table: string; problems: string[] } {
  return { table: table(rows), problems: rows.flatMap(rowProblems) };
}
