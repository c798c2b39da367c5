// Issue 26's targets, as one run measured them: sections 1 and 2 here, section 6 in targets-latency.ts.
import { fifoModel, type FifoFigures, type FifoScenario } from "../scenarios/fifo-model.ts";
import type { HandoffRow } from "../scenarios/handoff.ts";
import type { Throughput } from "../scenarios/uncontended.ts";
import { middle, middleHalf, num, pairedRatios } from "./format.ts";
import type { BenchResults } from "./results.ts";
import { connectionsTarget, DEFAULT_ID, latencyTargets, latencyWaiting, rate } from "./targets-latency.ts";

/** One target, as this run measured it. met: null when it could not be measured. */
export interface Target {
  text: string;
  met: boolean | null;
  detail: string;
}

type Measured = Extract<HandoffRow, { available: true }>;

function handoff(rows: HandoffRow[], id: string): Measured | undefined {
  const row = rows.find((r) => r.id === id);
  return row?.available ? row : undefined;
}

export function evaluateTargets(results: BenchResults): Target[] {
  // In the order of issue 26's list.
  return [
    ...latencyTargets(results.latency), waitingTarget(results), connectionsTarget(results.latency), fairnessTarget(results),
    floorTarget(results), ...pollTargets(results), requestsTarget(results),
  ];
}

function requestsTarget(results: BenchResults): Target {
  const calls = results.uncontended.find((r) => r.id === DEFAULT_ID)?.perCall;
  const met = calls ? calls.acquire === 1 && calls.heartbeat === 1 && calls.release === 1 : null;
  const detail = calls ? `acquire ${num(calls.acquire, 2)}, heartbeat ${num(calls.heartbeat, 2)}, release ${num(calls.release, 2)} requests per call (section 1)` : "no default fencelock row";
  return { text: "One request per acquire, heartbeat and release (warm script cache)", met, detail };
}

/** Round by round against the floor, judged on the middle half: the rounds ran moments apart. */
export function floorTarget(results: BenchResults): Target {
  const text = "Uncontended: at least 0.95× the raw floor, sequentially and with 16 clients (fencelock (default) row of section 1)";
  const ours = results.uncontended.find((r) => r.id === DEFAULT_ID);
  const floor = results.uncontended.find((r) => r.id === "raw-floor");
  const bare = results.uncontended.find((r) => r.id === "fencelock-scripts");
  if (!ours || !floor) return { text, met: null, detail: "missing rows" };
  const ratios = (a: Throughput, b: Throughput) => middleHalf(pairedRatios(a.roundOpsPerSec, b.roundOpsPerSec));
  const sequential = ratios(ours.sequential, floor.sequential);
  const concurrent = ratios(ours.concurrent, floor.concurrent);
  // Beside the verdict: the most the client could gain, were it to cost nothing.
  const bareShare = bare
    ? `; fencelock's two scripts sent bare, no library code: sequential ${middle(ratios(bare.sequential, floor.sequential), 2, "×")}, ` +
      `${bare.concurrent.clients} clients ${middle(ratios(bare.concurrent, floor.concurrent), 2, "×")} the floor`
    : "";
  return {
    text,
    met: Number.isFinite(sequential.mean) && Number.isFinite(concurrent.mean) ? sequential.mean >= 0.95 && concurrent.mean >= 0.95 : null,
    detail: `sequential ${middle(sequential, 2, "×")}, ${ours.concurrent.clients} clients ${middle(concurrent, 2, "×")} ` +
      `(round-by-round ratios, middle half, quartiles in brackets); overall ${num(ours.sequential.opsPerSec)} vs ${num(floor.sequential.opsPerSec)} ` +
      `and ${num(ours.concurrent.opsPerSec)} vs ${num(floor.concurrent.opsPerSec)} ops/s${bareShare}`,
  };
}

/** Section 2's default rows (both rounds' clients) and every default cell of section 6. */
function waitingTarget(results: BenchResults): Target {
  const text = "Default mode: at most 5 waiting requests per second per waiter on average, and at most 20 for the busiest";
  const section2 = ([["2a", results.handoff.immediate], ["2b", results.handoff.toWaiter]] as const).flatMap(([run, rows]) => {
    const row = handoff(rows, DEFAULT_ID);
    return row ? [{ where: `section ${run}`, mean: row.requestsPerWaiterPerSec.mean, max: row.requestsPerWaiterPerSec.max }] : [];
  });
  const all = [...section2, ...latencyWaiting(results.latency)];
  if (all.length === 0) return { text, met: null, detail: "no default fencelock rows" };
  const worstMean = all.reduce((a, b) => (b.mean > a.mean ? b : a));
  const worstMax = all.reduce((a, b) => (b.max > a.max ? b : a));
  const missing = all.some((w) => !Number.isFinite(w.mean) || !Number.isFinite(w.max));
  return {
    text,
    met: missing ? null : all.every((w) => w.mean <= 5 && w.max <= 20),
    detail: `highest mean ${rate(worstMean.mean)} (${worstMean.where}), busiest ${rate(worstMax.max)} (${worstMax.where}); ` +
      section2.map((w) => `${w.where}: ${rate(w.mean)} · ${rate(w.max)}`).join("; ") +
      ` (section 6: per round, middle half, over ${all.length - section2.length} cells)`,
  };
}

function fairnessTarget(results: BenchResults): Target {
  const row = handoff(results.handoff.toWaiter, DEFAULT_ID);
  const text = "Fairness kept: in 2b, longest ÷ mean wait at most 3× (default options)";
  if (!row) return { text, met: null, detail: "no default fencelock row in 2b" };
  const target = starvationTarget(results, text, 3, [{ run: "2b", row }]);
  const { clients, holdMs, durationMs, rounds } = results.plans.handoff;
  const scenario = { clients, holdMs, windowMs: durationMs / rounds, windows: rounds };
  return { ...target, detail: `${target.detail}; most overtaken in one wait: ${row.mostOvertaken}; ${idealLine(scenario, row.toWaiterGaps, results.requestFloor.afterPauseMs.p50)}` };
}

/**
 * What a perfectly fair lock would score in the same scenario (bench/scenarios/fifo-model.ts), beside
 * the measured figure and not in the verdict: part of the ratio comes from when the clients call.
 * With the run's own handoffs drawn at random, and a free lock taken in one request (`freeMs`),
 * the model serves as fast as the run did: what is left of the measured figure is the lock's.
 */
export function idealLine(scenario: FifoScenario, gaps: readonly number[], freeMs: number): string {
  const show = (m: FifoFigures) => `${num(m.median)}× (quartiles ${num(m.low)}–${num(m.high)}×, mean wait ${num(m.meanWaitMs)} ms)`;
  const perfect = fifoModel(scenario, 0);
  const asRun = gaps.length > 0 && Number.isFinite(freeMs) ? show(fifoModel(scenario, { gapMs: gaps, freeMs })) : "n/a";
  return `an ideal strict line in this scenario (hold ${num(scenario.holdMs, 0)} ms, ${perfect.runs} simulated runs), handoff 0 ms: ${show(perfect)}; ` +
    `with this run's ${gaps.length} handoffs to a waiter drawn at random and a free lock taken in one PING (${num(freeMs, 2)} ms): ${asRun}`;
}

/** Poll targets must hold in both runs (2a and 2b). */
function pollTargets(results: BenchResults): Target[] {
  const runs = [["2a", handoff(results.handoff.immediate, "fencelock-poll")], ["2b", handoff(results.handoff.toWaiter, "fencelock-poll")]] as const;
  const measured = runs.flatMap(([run, row]) => (row ? [{ run, row }] : []));
  if (measured.length === 0) return [{ text: "Poll mode targets", met: null, detail: "no poll row" }];
  const rates = measured.map(({ run, row }) =>
    `${run}: busiest waiter ${num(row.requestsPerWaiterPerSec.max)}/s (${num(row.allRequestsPerAcquireSec.max)}/s counting each first attempt)`);
  return [
    {
      text: "Poll mode (wake: \"poll\"): no waiter above 20 requests per second",
      met: measured.every(({ row }) => row.requestsPerWaiterPerSec.max <= 20),
      detail: rates.join("; "),
    },
    starvationTarget(results, "Poll mode: no client starved beyond 10× the mean wait", 10, measured),
  ];
}

/**
 * No wait outlasts the round it ran in, so longest ÷ mean can be no more than the round ÷ the
 * mean wait. Where that is within the limit, a client left waiting all round would still pass:
 * then the target is not measured, unless a run shows a miss anyway.
 */
function starvationTarget(results: BenchResults, text: string, limit: number, measured: ReadonlyArray<{ run: string; row: Measured }>): Target {
  const roundMs = results.plans.handoff.durationMs / results.plans.handoff.rounds;
  const waits = measured.map(({ run, row }) => `${run}: longest ${num(row.waitMs.max)} ms = ${num(row.starvation)}× the mean ${num(row.waitMs.mean)} ms`);
  const blind = measured.filter(({ row }) => !(roundMs / row.waitMs.mean > limit));
  const missed = measured.some(({ row }) => row.starvation > limit);
  const ceilings = blind.map(({ run, row }) => `${run} at most ${num(roundMs / row.waitMs.mean)}×`);
  // Even where it can, only a wait that began early enough in its round can show it.
  const earlyEnough = measured.map(({ run, row }) =>
    `${run} only for a wait begun in the first ${num(Math.max(0, roundMs - limit * row.waitMs.mean) / 1000, 2)} s of its ${num(roundMs / 1000)} s round`);
  const why = blind.length === 0
    ? `; a ${limit}× wait shows ${earlyEnough.join(", ")} (see also sections per client and round)`
    : `; a wait cannot outlast its ${num(roundMs / 1000)} s round, so this run could show ${ceilings.join(", ")}`;
  return { text, met: missed ? false : blind.length > 0 ? null : true, detail: waits.join("; ") + why };
}
