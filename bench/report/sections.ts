import type { HandoffRow } from "../scenarios/handoff.ts";
import type { ScalingCell } from "../scenarios/scaling.ts";
import type { Throughput, UncontendedRow } from "../scenarios/uncontended.ts";
import type { Measured } from "../../scripts/size.ts";
import { kib, middle, middleHalf, num, P99_MIN_SAMPLES, p99, pairedRatios, ratio, table } from "./format.ts";
import type { BenchResults } from "./results.ts";

export function uncontendedSection(rows: UncontendedRow[]): string {
  const ours = rows.find((r) => r.id.startsWith("fencelock"));
  const concurrency = rows[0]?.concurrent.clients ?? 0;
  const headers = ["library", "transport", "sequential ops/s (middle half of rounds)", "fencelock ÷ this (round by round)",
    `${concurrency} clients ops/s (middle half of rounds)`, "fencelock ÷ this (round by round)",
    "requests / cycle", "Redis cmds / cycle", "Redis µs / cycle", "requests per acquire · heartbeat · release"];
  const body = rows.map((r) => [
    r.label, r.transport.toUpperCase(),
    withSpread(r.sequential), ratioWithSpread(ours?.sequential, r.sequential),
    withSpread(r.concurrent), ratioWithSpread(ours?.concurrent, r.concurrent),
    num(r.sequential.requestsPerOp, 2), num(r.sequential.redisCommandsPerOp, 2), num(r.sequential.redisMicrosPerOp, 1),
    `${num(r.perCall.acquire, 2)} · ${num(r.perCall.heartbeat, 2)} · ${num(r.perCall.release, 2)}`,
  ]);
  const breakdown = rows.map((r) => [r.label, Object.entries(r.sequential.commandsPerOp).map(([c, n]) => `${c} ${num(n, 2)}`).join(", ")]);
  return [table(headers, body, 2), "", "What one acquire + release cycle runs inside Redis (INFO commandstats, commands called from Lua included):", "",
    table(["library", "commands per cycle"], breakdown, 2)].join("\n");
}

/**
 * "155.3 (139–177)": the mean of the middle half of its rounds, then their quartiles, as the
 * targets judge it: on a shared machine one round in sixteen can stall on a neighbour.
 */
export function withSpread(t: Pick<Throughput, "opsPerSec" | "roundOpsPerSec">): string {
  if (t.roundOpsPerSec.length < 2) return num(t.opsPerSec);
  return middle(middleHalf(t.roundOpsPerSec), 1);
}

/**
 * "0.97× (0.91–1.04×)": the ratios of each round's pair (round r of one library against round r
 * of the other, run moments apart), their middle half's mean, then their quartiles, which show
 * how much of a difference the machine's noise could hide.
 */
export function ratioWithSpread(ours: Throughput | undefined, peer: Throughput): string {
  const pairs = pairedRatios(ours?.roundOpsPerSec ?? [], peer.roundOpsPerSec);
  if (pairs.length < 2 || ours === peer) return ratio(ours?.opsPerSec, peer.opsPerSec);
  return middle(middleHalf(pairs), 2, "×");
}

type Measured5 = Extract<HandoffRow, { available: true }>;

/** Which gap the ratio columns compare: to the next holder (2a) or to a waiting client (2b). */
export type Headline = "next" | "waiter";

const headlineP50 = (r: Measured5 | undefined, headline: Headline) => (headline === "next" ? r?.gapMs.p50 : r?.toWaiterGapMs.p50);

export function handoffSection(rows: HandoffRow[], headline: Headline): string {
  const measured = rows.filter((r): r is Measured5 => r.available);
  const reference = measured.find((r) => r.id === "fencelock-default") ?? measured.find((r) => r.id === "fencelock-poll");
  const ref = reference?.label ?? "fencelock";
  const headers = ["library", "critical sections/s", "gap to next holder p50 · p99 ms", "gap to a waiter p50 · p99 ms", "handed to a waiter",
    `${headline === "next" ? "next-holder" : "waiter"} p50: ${ref} ÷ this`, `sections/s: ${ref} ÷ this`, "waiting requests / s (mean · max)",
    "mean wait ms", "longest wait ms", "longest ÷ mean", "most overtaken in one wait", "sections per client and round", "retry windows run out"];
  const body = rows.map((r) => (r.available ? handoffRow(r, reference, headline) : [r.label, `not available: ${r.note}`, ...headers.slice(2).map(() => "")]));
  const overlaps = measured.filter((r) => r.overlaps > 0).map((r) => `${r.label}: ${r.overlaps}`);
  const exclusion = overlaps.length === 0
    ? "Mutual exclusion held throughout: no holder's acquire() resolved before the previous holder called release()."
    : `**Overlapping critical sections seen** (next holder before the previous release began): ${overlaps.join(", ")}.`;
  return [table(headers, body), "", exclusion, `A p99 from fewer than ${P99_MIN_SAMPLES} samples is shown as n/a.`].join("\n");
}

function handoffRow(r: Measured5, reference: Measured5 | undefined, headline: Headline): string[] {
  return [
    r.label, num(r.sectionsPerSec),
    `${num(r.gapMs.p50, 2)} · ${p99(r.gapMs, 2)}`, `${num(r.toWaiterGapMs.p50, 2)} · ${p99(r.toWaiterGapMs, 2)}`,
    `${num(r.changedHands * 100, 0)} %`,
    ratio(headlineP50(reference, headline), headlineP50(r, headline)), ratio(reference?.sectionsPerSec, r.sectionsPerSec),
    `${num(r.requestsPerWaiterPerSec.mean)} · ${num(r.requestsPerWaiterPerSec.max)}`,
    num(r.waitMs.mean), num(r.waitMs.max), `${num(r.starvation)}×`, String(r.mostOvertaken),
    `${r.sectionsPerClient.min}–${r.sectionsPerClient.max}`, String(r.exhausted),
  ];
}

export function scalingSection(cells: ScalingCell[], cellMs: number): string {
  const names = cells.filter((c) => c.axis === "names");
  const contenders = cells.filter((c) => c.axis === "contenders");
  const namesTable = table(["library", "distinct names", "clients", "ops/s", "requests / op", "wait p50 ms", "wait p99 ms"],
    names.map((c) => [c.library, num(c.names, 0), String(c.clients), num(c.opsPerSec), num(c.requestsPerOp, 2), num(c.waitMs.p50, 2), p99(c.waitMs, 2)]));
  const contendersTable = table(["library", "contenders (1 name)", "critical sections/s", "gap to a waiter p50 ms", "requests / op", "wait p99 ms", "longest ÷ mean wait", "clients that never held it", "busiest waiter requests/s", "overlaps"],
    contenders.map((c) => [c.library, String(c.clients), num(c.opsPerSec), num(c.gapP50Ms, 2), num(c.requestsPerOp, 2), p99(c.waitMs),
      starvationCell(c, cellMs), String(c.neverHeld), num(c.requestsPerWaiterPerSec), String(c.overlaps)]));
  return ["Distinct names (each of the N names taken once, untimed, before the cell; then each client acquires and releases a name picked at random among the N, no hold; libraries in a random order per N):", "", namesTable,
    "", "Contenders on one name (hold 5 ms; a client that released rejoins once another has the lock and 0–100 ms later, as in 2b; " +
      "a lone contender asks again at once). \"Longest ÷ mean\" is n/a where a wait as long as the cell " +
      "is under 10× the mean (it could not show starvation); \"never held\" counts the clients left out for the whole cell. " +
      "\"Overlaps\": a holder's acquire() resolved before the previous holder called release().", "", contendersTable].join("\n");
}

/** A wait cannot outlast its cell: where the cell is under 10× the mean wait the ratio cannot show starvation. */
function starvationCell(c: ScalingCell, cellMs: number): string {
  return cellMs / c.waitMs.mean < 10 ? "n/a" : `${num(c.starvation)}×`;
}

export function sizeSection(rows: Measured[]): string {
  return table(["bundle", "minified", "min+gzip", "budget (gzip)"], rows.map((r) => [
    r.name, kib(r.bytes), kib(r.gzipBytes),
    r.budgetBytes === undefined ? "" : `${kib(r.budgetBytes)} ${r.gzipBytes <= r.budgetBytes ? "ok" : "OVER"}`,
  ]));
}

export function environmentSection(results: BenchResults): string {
  const env = results.environment;
  const packages = Object.entries(env.packages).map(([name, version]) => `${name} ${version}`).join(", ");
  return [
    `- Date: ${env.date}; commit ${env.commit}; total run ${num(results.runSeconds)} s`,
    `- Node ${env.node} on ${env.platform}, ${env.cpus} × ${env.cpuModel}; Redis ${env.redis}`,
    `- Packages: ${packages}`,
  ].join("\n");
}

export function settingsSection(results: BenchResults): string {
  return results.libraries.map((l) => `- **${l.label}** (${l.transport.toUpperCase()}): ${l.settings}`).join("\n");
}
