// One N's part of the quorum section: the sequential, concurrent and contended tables, the round
// trips they compare with, what one cycle sends and runs per node, and what went wrong.
import type { Summary } from "../harness/stats.ts";
import type { ContendedRow, QuorumGroup, QuorumResults } from "../scenarios/quorum.ts";
import type { Rounds } from "../scenarios/quorum-rounds.ts";
import { num, p99, table } from "./format.ts";
import { withSpread } from "./sections.ts";

/** A library's label from its id. */
type LabelOf = (id: string) => string;

export function groupSection(g: QuorumGroup, results: QuorumResults): string {
  const name = (id: string) => label(results, g, id);
  const plan = results.plan;
  return [
    `### N = ${g.nodes} (majority ${g.majority})`,
    "",
    "Uncontended acquire + release, one client per library, the libraries and the round-trip probes taking turns in a",
    "random order. \"Requests per cycle, all\": every request the client sent over the rounds ÷ cycles, those sent after",
    "acquire() or release() returned included. One-round acquires: those that sent no adopt.lua before they returned;",
    "adopt.lua after an acquire returned goes to a node whose grant came in after the majority had settled the vote.",
    "",
    sequentialTable(g, name),
    "",
    `${plan.concurrent.clients} clients per library, each on a name of its own, each library alone in its part of a round:`,
    "",
    concurrentTable(g, name),
    "",
    "Round trips in the same rounds (a trivial script through each node's local server):",
    "",
    roundTripsTable(g),
    "",
    `What one cycle sends and runs, node by node (a separate run of ${plan.sequential.countedCycles} sequential cycles per library; node 1 is the one-node library's):`,
    "",
    countedTable(g, name),
    "",
    `Contended: ${plan.contention.clients} clients on one name, hold ${plan.contention.holdMs} ms. "immediate": the releaser competes again at once;`,
    "\"after-handoff\": it rejoins once another client holds the lock, then 0–100 ms later (as in sections 2a and 2b).",
    "Attempts per acquire: acquire.lua rounds per acquire() call (fencelock). Longest ÷ mean: the longest single wait ÷ the mean wait.",
    "",
    contendedTable(g, name),
    "",
    overlapsLine(g, name),
    "",
    "What went wrong:",
    "",
    ...anomalyLines(g, name),
  ].join("\n");
}

function label(results: QuorumResults, group: QuorumGroup, id: string): string {
  return group.libraries.find((l) => l.id === id)?.label ?? results.groups.flatMap((g) => g.libraries).find((l) => l.id === id)?.label ?? id;
}

const ms = (s: Summary, digits = 2) => `${num(s.p50, digits)} · ${p99(s, digits)}`;

function roundsCell(r: Rounds | null): string {
  if (!r) return "—";
  const share = r.acquires ? (100 * r.oneRound) / r.acquires : Number.NaN;
  return `${num(share, 1)} % (${r.oneRound.toLocaleString("en-US")} of ${r.acquires.toLocaleString("en-US")})`;
}

function adoptCell(r: Rounds | null): string {
  return r ? `${num(r.adoptBeforePerAcquire, 2)} · ${num(r.adoptAfterPerAcquire, 2)}` : "—";
}

function sequentialTable(g: QuorumGroup, name: LabelOf): string {
  return table(
    ["library", "transport", "acquire p50 · p99 ms", "release p50 · p99 ms", "cycles/s", "requests inside acquire()",
      "requests per cycle, all", "one-round acquires", "adopt.lua per acquire, before · after it returned"],
    g.sequential.map((r) => [
      name(r.id), g.libraries.find((l) => l.id === r.id)?.transport.toUpperCase() ?? "",
      ms(r.acquireMs), ms(r.releaseMs), withSpread(r), num(r.requestsPerAcquire, 2), num(r.requestsPerCycle, 2),
      roundsCell(r.rounds), adoptCell(r.rounds),
    ]),
    2,
  );
}

function concurrentTable(g: QuorumGroup, name: LabelOf): string {
  return table(
    ["library", "cycles/s", "acquire p50 · p99 ms", "requests per cycle, all", "one-round acquires", "adopt.lua per acquire, before · after it returned"],
    g.concurrent.map((c) => [
      name(c.id), withSpread(c), ms(c.acquireMs), num(c.requestsPerCycle, 2), roundsCell(c.rounds), adoptCell(c.rounds),
    ]),
  );
}

function roundTripsTable(g: QuorumGroup): string {
  const rt = g.roundTrips;
  return table(
    ["round trip", "p50 · p99 ms"],
    [
      ...rt.perNodeMs.map((s, i) => [`node ${i + 1} alone`, ms(s)]),
      [`to all ${g.nodes} at once, until ${g.majority} answered`, ms(rt.fanOutMajorityMs)],
      [`to all ${g.nodes} at once, until all answered`, ms(rt.fanOutAllMs)],
    ],
  );
}

function countedTable(g: QuorumGroup, name: LabelOf): string {
  return table(
    ["library", "scripts sent to each node per cycle (transport)", "EVALSHA run per cycle, node by node (commandstats)", "Redis commands per cycle, node by node"],
    g.counted.map((c) => [
      name(c.id),
      c.scriptsPerCycle ? c.scriptsPerCycle.map((s, i) => `${i + 1}: ${Object.entries(s).map(([k, n]) => `${k} ${num(n, 2)}`).join(", ") || "—"}`).join("; ") : "— (TCP)",
      c.scriptRunsPerCycle.map((n) => num(n, 2)).join(" · "),
      c.redisCommandsPerCycle.map((n) => num(n, 1)).join(" · "),
    ]),
  );
}

function contendedTable(g: QuorumGroup, name: LabelOf): string {
  return table(
    ["library", "releaser rejoins", "critical sections/s", "gap to a waiter p50 · p99 ms", "mean wait ms", "longest wait ms", "longest ÷ mean",
      "sections per client and round", "requests per section", "attempts per acquire", "one-round acquires", "retry windows run out", "overlaps"],
    g.contention.map((r) => contendedRow(r, name(r.id))),
  );
}

function contendedRow(r: ContendedRow, name: string): string[] {
  return [
    name, r.rejoin, num(r.sectionsPerSec), ms(r.toWaiterGapMs, 1), num(r.waitMs.mean), num(r.waitMs.max), `${num(r.starvation)}×`,
    `${r.sectionsPerClient.min}–${r.sectionsPerClient.max}`, num(r.requestsPerSection, 1),
    r.rounds ? num(r.rounds.attemptsPerAcquire, 2) : "—", roundsCell(r.rounds), String(r.exhausted), String(r.overlaps),
  ];
}

function overlapsLine(g: QuorumGroup, name: LabelOf): string {
  const overlaps = g.contention.filter((r) => r.overlaps > 0).map((r) => `${name(r.id)} (${r.rejoin}): ${r.overlaps}`);
  return overlaps.length ? `**Overlapping critical sections seen**: ${overlaps.join(", ")}.` : "Mutual exclusion held throughout: no holder's acquire() resolved before the previous holder called release().";
}

function anomalyLines(g: QuorumGroup, name: LabelOf): string[] {
  return g.anomalies.map((a) => {
    const parts = [`${a.errors} errors ridden out${a.firstErrors.length ? ` (first: ${a.firstErrors.map((e) => `"${e}"`).join("; ")})` : ""}`,
      `${a.failedReleases} releases that found the lease gone or failed`];
    if (a.fencesChecked > 0) parts.push(`${a.fenceRegressions} fences not above the previous holder's, of ${a.fencesChecked.toLocaleString("en-US")} checked${a.firstRegressions.length ? ` (${a.firstRegressions.join("; ")})` : ""}`);
    return `- ${name(a.id)}: ${parts.join("; ")}.`;
  });
}
