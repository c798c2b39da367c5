import type { HandoffRow } from "../scenarios/handoff.ts";
import { num } from "./format.ts";
import { ratioWithSpread, withSpread } from "./sections.ts";
import type { BenchResults } from "./results.ts";

/** One of issue 5's targets, as this run measured it. met: null when it could not be measured. */
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
  return [requestsTarget(results), throughputTarget(results), ...pushTargets(results), ...pollTargets(results)];
}

function requestsTarget(results: BenchResults): Target {
  const row = results.uncontended.find((r) => r.id === "fencelock-poll");
  const calls = row?.perCall;
  const met = calls ? calls.acquire === 1 && calls.heartbeat === 1 && calls.release === 1 : null;
  const detail = calls ? `acquire ${num(calls.acquire, 2)}, heartbeat ${num(calls.heartbeat, 2)}, release ${num(calls.release, 2)} requests per call` : "no fencelock row";
  return { text: "One HTTP request per acquire, heartbeat and release (warm script cache)", met, detail };
}

function throughputTarget(results: BenchResults): Target {
  const ours = results.uncontended.find((r) => r.id === "fencelock-poll");
  const peer = results.uncontended.find((r) => r.id === "upstash-lock");
  if (!ours || !peer) return { text: "Uncontended throughput ≥ @upstash/lock", met: null, detail: "missing rows" };
  const met = ours.sequential.opsPerSec >= peer.sequential.opsPerSec && ours.concurrent.opsPerSec >= peer.concurrent.opsPerSec;
  const detail = `sequential ${withSpread(ours.sequential)} vs ${withSpread(peer.sequential)} ops/s = ${ratioWithSpread(ours.sequential, peer.sequential)}; ` +
    `${ours.concurrent.clients} clients ${withSpread(ours.concurrent)} vs ${withSpread(peer.concurrent)} ops/s = ${ratioWithSpread(ours.concurrent, peer.concurrent)} ` +
    "(middle half of the rounds, and of the round-by-round ratios, in brackets)";
  return { text: "Uncontended throughput ≥ @upstash/lock on the same endpoint (sequential and concurrent)", met, detail };
}

function pushTargets(results: BenchResults): Target[] {
  const push = handoff(results.handoff.toWaiter, "fencelock-push");
  const peer = handoff(results.handoff.toWaiter, "upstash-lock");
  const pushNext = handoff(results.handoff.immediate, "fencelock-push");
  const missing = results.push.available ? "no push row" : `push not available: ${results.push.reason}`;
  if (!push) {
    return [
      { text: "Push handoff p50 ≤ 5 ms", met: null, detail: missing },
      { text: "Push handoff p50 ≤ ¼ of @upstash/lock's", met: null, detail: missing },
    ];
  }
  const p50 = push.toWaiterGapMs.p50;
  const floor = results.requestFloor;
  const quarter = peer ? peer.toWaiterGapMs.p50 / 4 : Number.NaN;
  const also = pushNext ? `; in 2a, where the releaser asks again at once, the gap to the next holder has p50 ${num(pushNext.gapMs.p50, 2)} ms` : "";
  return [
    { text: "Push handoff p50 ≤ 5 ms", met: Number.isNaN(p50) ? null : p50 <= 5, detail: `handoff to a waiter (2b) p50 ${num(p50, 2)} ms${also}` },
    {
      text: "Push handoff p50 ≤ ¼ of @upstash/lock's",
      met: peer && !Number.isNaN(p50) && !Number.isNaN(quarter) ? p50 <= quarter : null,
      detail: (peer ? `2b: ${num(p50, 2)} ms vs ¼ × ${num(peer.toWaiterGapMs.p50, 2)} = ${num(quarter, 2)} ms` : "no @upstash/lock row") +
        `; for scale, one request alone through the same server (a PING) took p50 ${num(floor.afterPauseMs.p50, 2)} ms after a ` +
        `${floor.pauseMs} ms pause and ${num(floor.backToBackMs.p50, 2)} ms back to back`,
    },
  ];
}

/** Poll targets must hold in both runs (2a and 2b). */
function pollTargets(results: BenchResults): Target[] {
  const runs = [["2a", handoff(results.handoff.immediate, "fencelock-poll")], ["2b", handoff(results.handoff.toWaiter, "fencelock-poll")]] as const;
  const measured = runs.flatMap(([run, row]) => (row ? [{ run, row }] : []));
  if (measured.length === 0) return [{ text: "Poll mode targets", met: null, detail: "no poll row" }];
  const rates = measured.map(({ run, row }) =>
    `${run}: busiest waiter ${num(row.requestsPerWaiterPerSec.max)}/s (${num(row.allRequestsPerAcquireSec.max)}/s counting each first attempt)`);
  const waits = measured.map(({ run, row }) => `${run}: longest ${num(row.waitMs.max)} ms = ${num(row.starvation)}× the mean ${num(row.waitMs.mean)} ms`);
  return [
    {
      text: "Poll mode: no waiter above 20 requests per second",
      met: measured.every(({ row }) => row.requestsPerWaiterPerSec.max <= 20),
      detail: rates.join("; "),
    },
    starvationTarget(results, measured, waits),
  ];
}

const STARVATION_LIMIT = 10;

/**
 * No wait outlasts the round it ran in, so longest ÷ mean can be no more than the round ÷ the
 * mean wait. Where that is within the limit, a client left waiting all round would still pass:
 * then the target is not measured, unless a run shows a miss anyway.
 */
function starvationTarget(results: BenchResults, measured: ReadonlyArray<{ run: string; row: Measured }>, waits: string[]): Target {
  const roundMs = results.plans.handoff.durationMs / results.plans.handoff.rounds;
  const blind = measured.filter(({ row }) => !(roundMs / row.waitMs.mean > STARVATION_LIMIT));
  const missed = measured.some(({ row }) => row.starvation > STARVATION_LIMIT);
  const ceilings = blind.map(({ run, row }) => `${run} at most ${num(roundMs / row.waitMs.mean)}×`);
  // Even where it can, only a wait that began early enough in its round can show it.
  const earlyEnough = measured.map(({ run, row }) =>
    `${run} only for a wait begun in the first ${num(Math.max(0, roundMs - STARVATION_LIMIT * row.waitMs.mean) / 1000, 2)} s of its ${num(roundMs / 1000)} s round`);
  const why = blind.length === 0
    ? `; a ${STARVATION_LIMIT}× wait shows ${earlyEnough.join(", ")} (a weak check; see also sections per client and round)`
    : `; a wait cannot outlast its ${num(roundMs / 1000)} s round, so this run could show ${ceilings.join(", ")}`;
  return {
    text: `Poll mode: no client starved beyond ${STARVATION_LIMIT}× the mean wait`,
    met: missed ? false : blind.length > 0 ? null : true,
    detail: waits.join("; ") + why,
  };
}
