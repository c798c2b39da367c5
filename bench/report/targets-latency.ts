// Issue 26's targets on the realistic-latency scenario (section 6), default options.
import type { LatencyAtRtt, LatencyCellId, LatencyResults, LatencyRow } from "../scenarios/latency.ts";
import { connectionsPerAcquire } from "../scenarios/latency-cell.ts";
import { middle, num, type MiddleHalf } from "./format.ts";
import { ceilingVersusPeer, perRound, versusPeer, versusPing } from "./latency.ts";
import type { Target } from "./targets.ts";

export const DEFAULT_ID = "fencelock-default";

interface Check {
  where: string;
  figure: MiddleHalf | undefined;
}

/** A target met when every check's middle-half mean is within `limit`; not measured when one is missing. */
function judged(text: string, checks: Check[], within: (value: number) => boolean, unit: string, digits = 2): Target {
  if (checks.length === 0) return { text, met: null, detail: "no default fencelock rows in section 6" };
  const missing = checks.filter((c) => !c.figure || !Number.isFinite(c.figure.mean));
  const met = missing.length > 0 ? null : checks.every((c) => within(c.figure?.mean ?? Number.NaN));
  const detail = checks.map((c) => `${c.where} ${c.figure ? middle(c.figure, digits, unit) : "n/a"}`).join("; ");
  return { text, met, detail: `${detail} (middle half of the rounds, quartiles in brackets)` };
}

function defaultRows(results: LatencyResults, cells: readonly LatencyCellId[]): Array<{ at: LatencyAtRtt; row: LatencyRow }> {
  return results.rtts.flatMap((at) => at.rows.filter((r) => r.id === DEFAULT_ID && cells.includes(r.cell)).map((row) => ({ at, row })));
}

const where = (at: LatencyAtRtt, row: LatencyRow, name = row.cell === "many" ? `${row.clients} contenders` : row.cell) => `${at.rttMs} ms ${name}`;

export function latencyTargets(results: LatencyResults | undefined): Target[] {
  if (!results) return [{ text: "At every RTT of the realistic-latency scenario, default options", met: null, detail: "section 6 did not run" }];
  const rtts = results.plan.rttsMs.join(", ");
  const many = results.plan.manyContenders;
  const eight = results.plan.handoffClients;
  const ratio = (cells: LatencyCellId[], name?: string) =>
    defaultRows(results, cells).map(({ at, row }) => ({ where: where(at, row, name), figure: versusPeer(at, row) }));
  const speed = judged(`At every RTT, default options: 2a, ${eight} contenders and ${many} contenders sections/s ≥ 1.2× @upstash/lock (${eight} contenders is the 2b cell)`,
    [...ratio(["2a"]), ...ratio(["2b"], `${eight} contenders`), ...ratio(["many"])], (v) => v >= 1.2, "×");
  // Beside the verdict, not in it: where even a handoff of exactly one round trip would fall short.
  const ceilings = defaultRows(results, ["2a", "2b", "many"]).map(({ at, row }) => {
    const ceiling = ceilingVersusPeer(at, row, results.plan.holdMs);
    return `${where(at, row)} ${ceiling ? middle(ceiling, 2, "×") : "n/a"}`;
  });
  return [
    judged(`At every RTT (${rtts} ms), default options: 2b sections/s ≥ 1.5× @upstash/lock`, ratio(["2b"]), (v) => v >= 1.5, "×"),
    { ...speed, detail: `${speed.detail}. The most any lock could reach that hands over on release in one round trip (hold + PING p50 a section), ÷ @upstash/lock: ${ceilings.join("; ")}` },
    judged("At every RTT, default options: handoff to a waiter p50 ≤ 1.5× a PING through the same proxy and server (each cell, round by round)",
      defaultRows(results, ["2a", "2b", "many"]).map(({ at, row }) => ({ where: where(at, row), figure: versusPing(at, row) })), (v) => v <= 1.5, "×"),
  ];
}

export function connectionsTarget(results: LatencyResults | undefined): Target {
  const text = "Default mode: at most 0.1 new connections per acquire once warm (section 6, each cell at every RTT)";
  if (!results) return { text, met: null, detail: "section 6 did not run" };
  return judged(text, defaultRows(results, ["2a", "2b", "many"]).map(({ at, row }) => ({ where: where(at, row), figure: perRound(row, connectionsPerAcquire) })), (v) => v <= 0.1, "", 3);
}

/** The default rows' waiting requests per waiter in section 6, for the waiting-cost target. */
export function latencyWaiting(results: LatencyResults | undefined): Array<{ where: string; mean: number; max: number }> {
  if (!results) return [];
  return defaultRows(results, ["2a", "2b", "many"]).map(({ at, row }) => ({
    where: `section 6 ${where(at, row)}`,
    mean: perRound(row, (r) => r.waitingRequestsPerSec.mean).mean,
    max: perRound(row, (r) => r.waitingRequestsPerSec.max).mean,
  }));
}

export const rate = (value: number): string => `${num(value)}/s`;
