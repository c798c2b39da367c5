// A discrete-event model of the 2b scenario (runContention with rejoin "after-handoff") served by an
// ideal strict-FIFO lock: what longest ÷ mean wait a perfectly fair lock would show in the same run.
import { prng } from "../../test/support/chaotic-fetch.ts";
import { mean, quantile } from "../harness/stats.ts";
import { REJOIN_JITTER_MS } from "./contention.ts";

/** The scenario as one library's rows of 2b ran it: `windows` windows (rounds) of `windowMs`, pooled. */
export interface FifoScenario {
  clients: number;
  holdMs: number;
  windowMs: number;
  windows: number;
}

/** One simulated acquire() call. `first`: the client's first call of its window. */
export interface ModelWait {
  client: number;
  start: number;
  ms: number;
  first: boolean;
  /** Still waiting at the window's end: counted up to it, as the bench counts an aborted wait. */
  cutOff: boolean;
}

export interface ModelRun {
  waits: ModelWait[];
  /** Longest single wait ÷ mean wait over all windows, as waitMetrics computes it. */
  ratio: number;
  longest: ModelWait | undefined;
}

/**
 * One window. The lock serves callers in the order they called, each `gapMs` after the previous
 * holder began to release (or at once if it is free). As in contend(): every client first sleeps
 * the jitter; a client that released calls again the jitter after another client's acquire. The
 * 1 s rejoin cap never binds: each acquire wakes the releaser, so the lock never sits idle that long.
 */
export function simulateWindow(scenario: FifoScenario, gapMs: number, random: () => number): ModelWait[] {
  const { clients, holdMs, windowMs: end } = scenario;
  // Alone, a client calls again at once, with no jitter (as in contend()).
  const jitter = () => (clients > 1 ? random() * REJOIN_JITTER_MS : 0);
  // The time of a client's next call; NaN while it waits for another's acquire, Infinity once done.
  const calls = Array.from({ length: clients }, jitter);
  const called = calls.map(() => false);
  const waits: ModelWait[] = [];
  let lastRelease = Number.NEGATIVE_INFINITY;
  for (let next = earliest(calls, end); next >= 0; next = earliest(calls, end)) {
    const start = calls[next] ?? Number.NaN;
    const acquiredAt = Math.max(start, lastRelease + gapMs);
    const cutOff = acquiredAt > end;
    waits.push({ client: next, start, ms: Math.min(acquiredAt, end) - start, first: !called[next], cutOff });
    called[next] = true;
    if (cutOff) {
      calls[next] = Number.POSITIVE_INFINITY;
      continue;
    }
    calls.forEach((at, k) => {
      if (k !== next && Number.isNaN(at)) calls[k] = acquiredAt + jitter();
    });
    lastRelease = acquiredAt + holdMs;
    calls[next] = clients > 1 ? Number.NaN : lastRelease;
  }
  return waits;
}

/** The client whose call comes first (the lowest index on a tie), among calls before `end`; -1 if none. */
function earliest(calls: readonly number[], end: number): number {
  let best = -1;
  calls.forEach((at, k) => {
    if (at < end && (best < 0 || at < (calls[best] ?? Number.POSITIVE_INFINITY))) best = k;
  });
  return best;
}

/** All windows of one simulated run, from one seeded generator. */
export function simulateRun(scenario: FifoScenario, gapMs: number, seed: number): ModelRun {
  const random = prng(seed);
  const waits = Array.from({ length: scenario.windows }, () => simulateWindow(scenario, gapMs, random)).flat();
  return { waits, ...longestOverMean(waits) };
}

export function longestOverMean(waits: readonly ModelWait[]): Omit<ModelRun, "waits"> {
  const longest = waits.reduce<ModelWait | undefined>((a, b) => (!a || b.ms > a.ms ? b : a), undefined);
  return { ratio: (longest?.ms ?? Number.NaN) / mean(waits.map((w) => w.ms)), longest };
}

export interface FifoFigures {
  median: number;
  low: number;
  high: number;
  runs: number;
  meanWaitMs: number;
  /** Share of runs whose longest wait was a client's first call of its window (the opening jitter's arrivals). */
  longestFirst: number;
  /** Share of runs whose longest wait was cut off at a window's end. */
  longestCutOff: number;
}

/** longest ÷ mean over `runs` seeded runs (seeds 1…runs): the median and quartiles. */
export function fifoModel(scenario: FifoScenario, gapMs: number, runs = 200): FifoFigures {
  const all = Array.from({ length: runs }, (_, i) => simulateRun(scenario, gapMs, i + 1));
  const ratios = all.map((r) => r.ratio).sort((a, b) => a - b);
  const share = (test: (w: ModelWait) => boolean) => all.filter((r) => r.longest && test(r.longest)).length / runs;
  return {
    median: quantile(ratios, 0.5), low: quantile(ratios, 0.25), high: quantile(ratios, 0.75), runs,
    meanWaitMs: mean(all.map((r) => mean(r.waits.map((w) => w.ms)))),
    longestFirst: share((w) => w.first), longestCutOff: share((w) => w.cutOff),
  };
}
