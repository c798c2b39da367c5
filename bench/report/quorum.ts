// The quorum section of the report (issue 25), in latest.md and on its own in quorum.md.
import type { Summary } from "../harness/stats.ts";
import type { ContendedRow, QuorumGroup, QuorumResults } from "../scenarios/quorum.ts";
import type { Rounds } from "../scenarios/quorum-sequential.ts";
import type { Environment } from "./env.ts";
import { check, num, p99, table } from "./format.ts";
import { withSpread } from "./sections.ts";
import type { Target } from "./targets.ts";

/** How much above one round trip the issue allows the one-round path, for the client's own work. */
const SLACK_MS = 1;

export function quorumSection(results: QuorumResults): string {
  const { sequential, concurrent, contention } = results.plan;
  const libraries = results.groups[0]?.libraries.length ?? 0;
  return [
    quorumMethod(results),
    "",
    ...results.groups.flatMap((g) => [groupSection(g, results), ""]),
    `### Targets (issue 25), as measured in this run`,
    "",
    quorumTargets(results).map((t) => `${check(t.met)} ${t.text} — ${t.detail}`).join("\n"),
    "",
    "### Settings",
    "",
    ...(results.groups[0]?.libraries ?? []).map((l) => `- **${l.label}** (${l.transport.toUpperCase()}): ${l.settings}`),
    `- Sequential: ${sequential.rounds} rounds of ${num((sequential.msEach * libraries) / 1000)} s, after ${num(sequential.warmMs / 1000)} s of untimed cycles per library; ` +
      `${concurrent.clients} clients: ${num(concurrent.durationMs / 1000)} s per library in ${concurrent.rounds} rounds; ` +
      `contention: ${contention.clients} clients, hold ${contention.holdMs} ms, ${num(contention.durationMs / 1000)} s per library and rejoin mode in ${contention.rounds} rounds.`,
  ].join("\n");
}

function quorumMethod(results: QuorumResults): string {
  const nodes = Math.max(...results.plan.nodeCounts);
  return [
    `How: ${nodes} nodes, each a \`redis-server\` of its own behind a local Upstash-compatible server of its own (\`fencelock/local\`),`,
    "each pair in a child process of its own, all on loopback on this one machine; the clients run in the bench process.",
    "For N = 3 the first three nodes are used, and the other two sit idle. fencelock in quorum mode gets one `@upstash/redis`",
    "client per node; fencelock on one node uses node 1 only; redlock gets one ioredis TCP connection per redis-server and",
    "its own quorum. Each library uses a key prefix of its own. Requests are counted at the transport (HTTP requests, or",
    "commands on the TCP connections). Whether an acquire took the one-round path is read from the requests it sent: the",
    "EVALSHA of `adopt.lua` (the write-back of the chosen fence) is told apart from the other scripts by its SHA-1 in the",
    "request body; an acquire that sent no adopt.lua before it returned took one round per attempt. A separate run of",
    `${results.plan.sequential.countedCycles} cycles per library reads \`INFO commandstats\` on every node as a cross-check.`,
    "The round trip the target compares with is a trivial script (EVALSHA of `return 1`) through each node's local server,",
    "taken in turns with the lock cycles of the sequential rounds (one node at a time, and to all nodes at once as an acquire",
    "sends). Every fence each fencelock client received is checked to rise from one holder of a name to the next.",
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

function groupSection(g: QuorumGroup, results: QuorumResults): string {
  const name = (id: string) => label(results, g, id);
  const sequential = table(
    ["library", "transport", "acquire p50 · p99 ms", "release p50 · p99 ms", "cycles/s", "requests inside acquire()",
      "requests per cycle, all", "one-round acquires", "adopt.lua per acquire, before · after it returned"],
    g.sequential.map((r) => [
      name(r.id), g.libraries.find((l) => l.id === r.id)?.transport.toUpperCase() ?? "",
      ms(r.acquireMs), ms(r.releaseMs), withSpread(r), num(r.requestsPerAcquire, 2), num(r.requestsPerCycle, 2),
      roundsCell(r.rounds), r.rounds ? `${num(r.rounds.adoptBeforePerAcquire, 2)} · ${num(r.rounds.adoptAfterPerAcquire, 2)}` : "—",
    ]),
    2,
  );
  const concurrent = table(
    ["library", "cycles/s", "acquire p50 · p99 ms", "requests per cycle, all", "one-round acquires", "adopt.lua per acquire, before · after it returned"],
    g.concurrent.map((c) => [
      name(c.id), withSpread(c), ms(c.acquireMs), num(c.requestsPerCycle, 2), roundsCell(c.rounds),
      c.rounds ? `${num(c.rounds.adoptBeforePerAcquire, 2)} · ${num(c.rounds.adoptAfterPerAcquire, 2)}` : "—",
    ]),
  );
  const rt = g.roundTrips;
  const trips = table(
    ["round trip", "p50 · p99 ms"],
    [
      ...rt.perNodeMs.map((s, i) => [`node ${i + 1} alone`, ms(s)]),
      [`to all ${g.nodes} at once, until ${g.majority} answered`, ms(rt.fanOutMajorityMs)],
      [`to all ${g.nodes} at once, until all answered`, ms(rt.fanOutAllMs)],
    ],
  );
  const counted = table(
    ["library", "scripts sent to each node per cycle (transport)", "EVALSHA run per cycle, node by node (commandstats)", "Redis commands per cycle, node by node"],
    g.counted.map((c) => [
      name(c.id),
      c.scriptsPerCycle ? c.scriptsPerCycle.map((s, i) => `${i + 1}: ${Object.entries(s).map(([k, n]) => `${k} ${num(n, 2)}`).join(", ") || "—"}`).join("; ") : "— (TCP)",
      c.scriptRunsPerCycle.map((n) => num(n, 2)).join(" · "),
      c.redisCommandsPerCycle.map((n) => num(n, 1)).join(" · "),
    ]),
  );
  const contended = table(
    ["library", "releaser rejoins", "critical sections/s", "gap to a waiter p50 · p99 ms", "mean wait ms", "longest wait ms", "longest ÷ mean",
      "sections per client and round", "requests per section", "attempts per acquire", "one-round acquires", "retry windows run out", "overlaps"],
    g.contention.map((r) => contendedRow(r, name(r.id))),
  );
  const anomalies = g.anomalies.map((a) => {
    const parts = [`${a.errors} errors ridden out${a.firstErrors.length ? ` (first: ${a.firstErrors.map((e) => `"${e}"`).join("; ")})` : ""}`,
      `${a.failedReleases} releases that found the lease gone or failed`];
    if (a.fencesChecked > 0) parts.push(`${a.fenceRegressions} fences not above the previous holder's, of ${a.fencesChecked.toLocaleString("en-US")} checked${a.firstRegressions.length ? ` (${a.firstRegressions.join("; ")})` : ""}`);
    return `- ${name(a.id)}: ${parts.join("; ")}.`;
  });
  const overlaps = g.contention.filter((r) => r.overlaps > 0).map((r) => `${name(r.id)} (${r.rejoin}): ${r.overlaps}`);
  return [
    `### N = ${g.nodes} (majority ${g.majority})`,
    "",
    "Uncontended acquire + release, one client per library, the libraries and the round-trip probes taking turns in a",
    "random order. \"Requests per cycle, all\": every request the client sent over the rounds ÷ cycles, those sent after",
    "acquire() or release() returned included. One-round acquires: those that sent no adopt.lua before they returned;",
    "adopt.lua after an acquire returned goes to a node whose grant came in after the majority had settled the vote.",
    "",
    sequential,
    "",
    `${results.plan.concurrent.clients} clients per library, each on a name of its own, each library alone in its part of a round:`,
    "",
    concurrent,
    "",
    "Round trips in the same rounds (a trivial script through each node's local server):",
    "",
    trips,
    "",
    `What one cycle sends and runs, node by node (a separate run of ${results.plan.sequential.countedCycles} sequential cycles per library; node 1 is the one-node library's):`,
    "",
    counted,
    "",
    `Contended: ${results.plan.contention.clients} clients on one name, hold ${results.plan.contention.holdMs} ms. "immediate": the releaser competes again at once;`,
    "\"after-handoff\": it rejoins once another client holds the lock, then 0–100 ms later (as in sections 2a and 2b).",
    "Attempts per acquire: acquire.lua rounds per acquire() call (fencelock). Longest ÷ mean: the longest single wait ÷ the mean wait.",
    "",
    contended,
    "",
    overlaps.length ? `**Overlapping critical sections seen**: ${overlaps.join(", ")}.` : "Mutual exclusion held throughout: no holder's acquire() resolved before the previous holder called release().",
    "",
    "What went wrong:",
    "",
    ...anomalies,
  ].join("\n");
}

function contendedRow(r: ContendedRow, name: string): string[] {
  return [
    name, r.rejoin, num(r.sectionsPerSec), ms(r.toWaiterGapMs, 1), num(r.waitMs.mean), num(r.waitMs.max), `${num(r.starvation)}×`,
    `${r.sectionsPerClient.min}–${r.sectionsPerClient.max}`, num(r.requestsPerSection, 1),
    r.rounds ? num(r.rounds.attemptsPerAcquire, 2) : "—", roundsCell(r.rounds), String(r.exhausted), String(r.overlaps),
  ];
}

/** Issue 25's latency targets, per N, from the sequential rounds. */
export function quorumTargets(results: QuorumResults): Target[] {
  return results.groups.flatMap((g) => {
    const row = g.sequential.find((r) => r.id === `fencelock-quorum-${g.nodes}`);
    const ahead = g.sequential.find((r) => r.id === `fencelock-quorum-${g.nodes}-ahead`);
    const rtt = g.roundTrips.majorityNodeP50;
    const single = g.sequential.find((r) => r.id === "fencelock-single");
    if (!row?.oneRoundAcquireMs) return [{ text: `N = ${g.nodes}: quorum acquire p50 ≤ slowest majority node's round trip + ${SLACK_MS} ms`, met: null, detail: "no quorum row" }];
    const one = row.oneRoundAcquireMs;
    const two = ahead?.writeBackAcquireMs ?? row.writeBackAcquireMs;
    const context = `for context: all ${g.nodes} nodes at once took p50 ${num(g.roundTrips.fanOutMajorityMs.p50, 2)} ms until ${g.majority} had answered ` +
      `(${num(g.roundTrips.fanOutAllMs.p50, 2)} ms until all had); fencelock on one node: acquire p50 ${num(single?.acquireMs.p50, 2)} ms`;
    return [
      {
        text: `N = ${g.nodes}: quorum acquire p50 on the one-round path ≤ the slowest majority node's round trip + ${SLACK_MS} ms`,
        met: one.n === 0 ? null : one.p50 <= rtt + SLACK_MS,
        detail: `${num(one.p50, 2)} ms (${one.n.toLocaleString("en-US")} one-round acquires of ${row.acquireMs.n.toLocaleString("en-US")}) vs ` +
          `${num(rtt, 2)} + ${SLACK_MS} = ${num(rtt + SLACK_MS, 2)} ms (the ${ordinal(g.majority)} fastest node's p50 alone); ${context}`,
      },
      {
        text: `N = ${g.nodes}: quorum acquire p50 with a write-back ≤ two round trips + ${SLACK_MS} ms`,
        met: !two || two.n === 0 ? null : two.p50 <= 2 * rtt + SLACK_MS,
        detail: !two || two.n === 0
          ? "no acquire in the sequential rounds needed a write-back, so this path was not timed"
          : `${num(two.p50, 2)} ms (the ${two.n.toLocaleString("en-US")} acquires of the "node 1 ahead" row that wrote back) vs 2 × ${num(rtt, 2)} + ${SLACK_MS} = ` +
            `${num(2 * rtt + SLACK_MS, 2)} ms; without a forced fence, ${row.writeBackAcquireMs?.n ?? 0} of ${row.acquireMs.n.toLocaleString("en-US")} acquires wrote back`,
      },
    ];
  });
}

function ordinal(n: number): string {
  return n === 1 ? "1st" : n === 2 ? "2nd" : n === 3 ? "3rd" : `${n}th`;
}

/** quorum.md: the quorum section on its own, as `npm run bench -- --only quorum` writes it (and the full run too). */
export function renderQuorumMarkdown(results: QuorumResults, environment: Environment): string {
  const packages = Object.entries(environment.packages).map(([n, v]) => `${n} ${v}`).join(", ");
  return [
    "# fencelock benchmark: quorum mode",
    "",
    `- Date: ${environment.date}; commit ${environment.commit}; quorum section ${num(results.seconds)} s`,
    `- Node ${environment.node} on ${environment.platform}, ${environment.cpus} × ${environment.cpuModel}; Redis ${environment.redis}`,
    `- Packages: ${packages}`,
    "",
    quorumSection(results),
    "",
  ].join("\n");
}
