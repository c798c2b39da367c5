// `npm run faults`: every Redis-level fault scenario in its full form (test/faults/faults.test.ts
// says what they are), then the report as a markdown table. Exits 1 when a scenario inside the
// stated condition repeated or regressed a fence or let a stale write through, or acquires never
// came back. `npm run faults -- --short` runs the short form; naming scenario ids runs only those;
// FAULTS_TRACE=1 prints each scenario's faults with their times.
import { FULL, SHORT } from "../test/support/faults/forms.ts";
import { report, runScenarios, SCENARIOS } from "../test/support/faults/scenarios.ts";

const args = process.argv.slice(2);
const form = args.includes("--short") ? SHORT : FULL;
const ids = args.filter((arg) => !arg.startsWith("--"));
const unknown = ids.filter((id) => !SCENARIOS.some((scenario) => scenario.id === id));
if (unknown.length) {
  console.error(`faults: no scenario ${unknown.join(", ")}; there are ${SCENARIOS.map((scenario) => scenario.id).join(", ")}`);
  process.exit(2);
}

const started = performance.now();
const rows = await runScenarios(form, ids.length ? SCENARIOS.filter((scenario) => ids.includes(scenario.id)) : SCENARIOS);
if (process.env.FAULTS_TRACE === "1") for (const row of rows) console.log(`\n${row.scenario}:\n${row.events.join("\n")}`);
const { table, problems } = report(rows);
console.log(`\n${table}\n`);
console.log(`faults: ${rows.length} rows in ${((performance.now() - started) / 1000).toFixed(0)} s (${form.label} form)`);
if (problems.length) {
  console.error(`\nfaults: ${problems.length} problems:\n${problems.join("\n")}`);
  process.exit(1);
}
