// The TCP section of the report (issue 27): in bench/results/tcp.md, and in latest.md after a full run.
import { quantile } from "../harness/stats.ts";
import type { Rejoin } from "../scenarios/contention.ts";
import { TCP_FLOOR, TCP_OURS, TCP_SCRIPTS_ALONE, type TcpContendedRow, type TcpResults } from "../scenarios/tcp.ts";
import type { Environment } from "./env.ts";
import { num, p99, pairedRatios, table } from "./format.ts";
import { uncontendedSection } from "./sections.ts";
import { idealLine, type Target } from "./targets.ts";

const SEMAPHORE = "redis-semaphore";
/** Issue 27's limits. */
const UNCONTENDED_MIN = 0.9;
const FAIRNESS_MAX = 3;

const MODE: Record<Rejoin, string> = { immediate: "the releaser competes again at once", "after-handoff": "the releaser rejoins once another client holds the lock, then 0–100 ms later" };
const SHORT: Record<Rejoin, string> = { immediate: "immediate rejoin", "after-handoff": "rejoin after handoff" };

/** The median of a sample and its quartiles, NaN left out. */
interface Median {
  median: number;
  low: number;
  high: number;
  n: number;
}

function median(values: readonly number[]): Median {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), low: quantile(sorted, 0.25), high: quantile(sorted, 0.75), n: sorted.length };
}

/** "1.23× (1.10–1.31×)": the median, then the quartiles. */
function showMedian(m: Median, digits: number, unit = ""): string {
  if (!Number.isFinite(m.median)) return "n/a";
  const value = `${num(m.median, digits)}${unit}`;
  return m.n < 2 ? value : `${value} (${num(m.low, digits)}–${num(m.high, digits)}${unit})`;
}

const contended = (results: TcpResults, rejoin: Rejoin) => results.contention.filter((r) => r.rejoin === rejoin);

/** The peer with the most sections per second in a rejoin mode (over all its rounds). */
function bestPeer(rows: readonly TcpContendedRow[]): TcpContendedRow | undefined {
  return rows.filter((r) => r.id !== TCP_OURS).reduce<TcpContendedRow | undefined>((a, b) => (!a || b.sectionsPerSec > a.sectionsPerSec ? b : a), undefined);
}

export function tcpSection(results: TcpResults): string {
  const { uncontended, contention } = results.plan;
  const rejoins = contention.rejoins;
  return [
    tcpMethod(results),
    "",
    `### Uncontended acquire + release (${uncontended.rounds} rounds per cell; sequential: ${num(uncontended.durationMs / 1000, 0)} s × libraries in turns of one cycle per library in random order; ${uncontended.concurrency} clients on names of their own: each library alone for its part of a round, in a new random order each round)`,
    "",
    uncontendedSection(results.uncontended),
    "",
    ...rejoins.flatMap((rejoin) => [
      `### Contended: ${contention.clients} clients on one name, hold ${contention.holdMs} ms, ${MODE[rejoin]} (${contention.rounds} rounds of ${num(contention.roundMs / 1000, 0)} s per library)`,
      "",
      contendedTable(contended(results, rejoin)),
      "",
    ]),
    `A PING on an ioredis connection took p50 ${num(results.ping.afterPauseMs.p50, 3)} ms (p99 ${p99(results.ping.afterPauseMs, 3)}) after ${results.plan.ping.pauseMs} ms of quiet, ` +
      `and ${num(results.ping.backToBackMs.p50, 3)} ms right after another (${results.ping.afterPauseMs.n} pairs): the floor under a handoff, which is a release and a wake-up.`,
    "",
    overlapsLine(results),
  ].join("\n");
}

function tcpMethod(results: TcpResults): string {
  const load = (l: number[]) => l.map((n) => num(n, 2)).join(" · ");
  return [
    "How: every library over ioredis (5.x, default options) to the same standalone `redis-server` on loopback, one connection",
    "per simulated client; fencelock goes through `fromIoredis(client)` with default lock options, and its push wake-ups",
    "through the adapter's one SUBSCRIBE connection per client. Requests are the commands each client's connection sent",
    "(fencelock's subscriber connection not counted). Ratios are medians of round-by-round ratios: round r of one library",
    "against round r of the other, run moments apart on a machine other work shares (quartiles in brackets).",
    `Load average (1 · 5 · 15 min) when the section began: ${load(results.load.before)}; when it ended: ${load(results.load.after)} (2 cores).`,
  ].join("\n");
}

function contendedTable(rows: readonly TcpContendedRow[]): string {
  const ours = rows.find((r) => r.id === TCP_OURS);
  const headers = ["library", "critical sections/s (median of rounds)", "fencelock ÷ this (round by round)", "gap to a waiter p50 · p99 ms",
    "gap to next holder p50 ms", "handed to a waiter", "commands per section", "waiting requests / s (mean · max)", "mean wait ms", "longest wait ms", "longest ÷ mean",
    "most overtaken in one wait", "sections per client and round", "retry windows run out"];
  const body = rows.map((r) => [
    r.label, showMedian(median(r.roundSectionsPerSec), 1),
    r === ours ? "1.00×" : showMedian(median(pairedRatios(ours?.roundSectionsPerSec ?? [], r.roundSectionsPerSec)), 2, "×"),
    `${num(r.toWaiterGapMs.p50, 2)} · ${p99(r.toWaiterGapMs, 2)}`, num(r.gapMs.p50, 2), `${num(r.changedHands * 100, 0)} %`, num(r.requestsPerSection, 2),
    `${num(r.requestsPerWaiterPerSec.mean)} · ${num(r.requestsPerWaiterPerSec.max)}`, num(r.waitMs.mean), num(r.waitMs.max),
    `${num(r.starvation)}×`, String(r.mostOvertaken), `${r.sectionsPerClient.min}–${r.sectionsPerClient.max}`, String(r.exhausted),
  ]);
  return table(headers, body);
}

function overlapsLine(results: TcpResults): string {
  const overlaps = results.contention.filter((r) => r.overlaps > 0).map((r) => `${r.label} (${SHORT[r.rejoin]}): ${r.overlaps}`);
  return overlaps.length === 0
    ? "Mutual exclusion held throughout: no holder's acquire() resolved before the previous holder called release()."
    : `**Overlapping critical sections seen** (next holder before the previous release began): ${overlaps.join(", ")}.`;
}

/** Issue 27's bench targets, as this run measured them. */
export function tcpTargets(results: TcpResults): Target[] {
  return [...uncontendedTargets(results), ...results.plan.contention.rejoins.flatMap((rejoin) => contendedTargets(results, rejoin))];
}

function uncontendedTargets(results: TcpResults): Target[] {
  const ours = results.uncontended.find((r) => r.id === TCP_OURS);
  const peer = results.uncontended.find((r) => r.id === SEMAPHORE);
  const floor = results.uncontended.find((r) => r.id === TCP_FLOOR);
  const bare = results.uncontended.find((r) => r.id === TCP_SCRIPTS_ALONE);
  const cells = [["sequential", "sequential"], [`${results.plan.uncontended.concurrency} clients on names of their own`, "concurrent"]] as const;
  return cells.map(([where, cell]) => {
    const text = `Uncontended, ${where}: fencelock over TCP ≥ ${UNCONTENDED_MIN}× redis-semaphore's Mutex`;
    if (!ours || !peer) return { text, met: null, detail: "missing rows" };
    const ratio = median(pairedRatios(ours[cell].roundOpsPerSec, peer[cell].roundOpsPerSec));
    const vsFloor = floor ? median(pairedRatios(ours[cell].roundOpsPerSec, floor[cell].roundOpsPerSec)) : undefined;
    // Beside the verdict: the most the client could gain, were it to cost nothing.
    const bareVsPeer = bare ? median(pairedRatios(bare[cell].roundOpsPerSec, peer[cell].roundOpsPerSec)) : undefined;
    return {
      text,
      met: Number.isFinite(ratio.median) ? ratio.median >= UNCONTENDED_MIN : null,
      detail: `${showMedian(ratio, 2, "×")} (median of ${ratio.n} round-by-round ratios, quartiles in brackets); ` +
        `${num(ours[cell].opsPerSec)} vs ${num(peer[cell].opsPerSec)} cycles/s over all rounds` +
        (vsFloor ? `; against the TCP floor ${showMedian(vsFloor, 2, "×")}` : "") +
        (bareVsPeer ? `; fencelock's two scripts sent bare, no library code: ${showMedian(bareVsPeer, 2, "×")} redis-semaphore's Mutex` : ""),
    };
  });
}

function contendedTargets(results: TcpResults, rejoin: Rejoin): Target[] {
  const rows = contended(results, rejoin);
  const ours = rows.find((r) => r.id === TCP_OURS);
  const best = bestPeer(rows);
  const { clients, holdMs, roundMs, rounds } = results.plan.contention;
  const speedText = `Contended (${clients} clients, ${SHORT[rejoin]}): sections/s ≥ the best TCP peer's`;
  const fairText = `Contended (${clients} clients, ${SHORT[rejoin]}): longest ÷ mean wait ≤ ${FAIRNESS_MAX}× (fencelock)`;
  if (!ours || !best) return [{ text: speedText, met: null, detail: "missing rows" }, { text: fairText, met: null, detail: "missing rows" }];
  const ratio = median(pairedRatios(ours.roundSectionsPerSec, best.roundSectionsPerSec));
  const others = rows.filter((r) => r.id !== TCP_OURS).map((r) => `${r.label} ${num(median(r.roundSectionsPerSec).median)}`).join(", ");
  // No wait outlasts its round: where the round is within the limit × the mean wait, a starved client would still pass.
  const blind = !(roundMs / ours.waitMs.mean > FAIRNESS_MAX);
  return [
    {
      text: speedText,
      met: Number.isFinite(ratio.median) ? ratio.median >= 1 : null,
      detail: `${showMedian(ratio, 2, "×")} ${best.label} (median of ${ratio.n} round-by-round ratios); ` +
        `median sections/s: fencelock ${num(median(ours.roundSectionsPerSec).median)}, ${others}`,
    },
    {
      text: fairText,
      met: ours.starvation > FAIRNESS_MAX ? false : blind ? null : true,
      detail: `longest ${num(ours.waitMs.max)} ms = ${num(ours.starvation)}× the mean ${num(ours.waitMs.mean)} ms; most overtaken in one wait: ${ours.mostOvertaken}; ` +
        rows.filter((r) => r.id !== TCP_OURS).map((r) => `${r.label} ${num(r.starvation)}× (overtaken ${r.mostOvertaken})`).join(", ") +
        (blind ? `; a wait cannot outlast its ${num(roundMs / 1000)} s round, so this run could not show more than ${num(roundMs / ours.waitMs.mean)}×` : "") +
        // Beside the measured ratio, not in the verdict: what a perfectly fair lock scores in this scenario.
        (rejoin === "after-handoff" ? `; ${idealLine({ clients, holdMs, windowMs: roundMs, windows: rounds }, ours.toWaiterGaps, results.ping.afterPauseMs.p50)}` : ""),
    },
  ];
}

/** The targets as a table: what, as measured, and met / missed. */
export function tcpTargetLines(results: TcpResults): string {
  const verdict = (met: boolean | null) => (met === null ? "not measured" : met ? "met" : "**missed**");
  return table(["target", "measured", ""], tcpTargets(results).map((t) => [t.text, t.detail, verdict(t.met)]), 2);
}

export function tcpSettings(results: TcpResults): string {
  return results.libraries.map((l) => `- **${l.label}**: ${l.settings}`).join("\n");
}

/** tcp.md: the section on its own, as `npm run bench -- --only tcp` writes it (and the full run too). */
export function renderTcpMarkdown(results: TcpResults, env: Environment): string {
  const packages = Object.entries(env.packages).map(([n, v]) => `${n} ${v}`).join(", ");
  return [
    "# fencelock benchmark: over TCP (issue 27)",
    "",
    `- Date: ${env.date}; commit ${env.commit}; TCP section ${num(results.seconds)} s`,
    `- Node ${env.node} on ${env.platform}, ${env.cpus} × ${env.cpuModel}; Redis ${env.redis}`,
    `- Packages: ${packages}`,
    "",
    tcpSection(results),
    "",
    "## Targets (issue 27), as measured in this run",
    "",
    tcpTargetLines(results),
    "",
    "## Settings",
    "",
    tcpSettings(results),
    "",
  ].join("\n");
}
