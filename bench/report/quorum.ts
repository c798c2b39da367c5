// The quorum section of the report (issue 25), in latest.md and on its own in quorum.md.
import type { QuorumResults } from "../scenarios/quorum.ts";
import type { Environment } from "./env.ts";
import { check, num } from "./format.ts";
import { groupSection } from "./quorum-group.ts";
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
