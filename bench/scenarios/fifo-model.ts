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
 * How the modelled lock serves: `gap()` is a handoff to a waiter, from the holder's release to the
 * waiter holding it; `freeMs` is taking a free lock (0: at once).
 */
export interface Service {
  gap: () => number;
  freeMs: number;
}

/**
 * One window. The lock serves callers in the order they called: a caller that finds it held gets
 * it a gap after the holder began to release; one that finds it free, `freeMs` after calling. As
 * in contend(): every client first sleeps the jitter; a client that released calls again the
 * jitter after another client's acquire. The 1 s rejoin cap never binds: each acquire wakes the
 * releaser, so the lock never sits idle that long.
 */
export function simulateWindow(scenario: FifoScenario, service: number | Service, random: () => number): ModelWait[] {
  const { gap, freeMs } = typeof service == "number" ? { gap: () => service, freeMs: 0 } : service;
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
    const acquiredAt = start < lastRelease ? lastRelease + gap() : start + freeMs;
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

/**
 * Handoffs of `gapMs`, or drawn at random from measured gaps (so their tail comes in as often as
 * it came in the run), and free locks taken in `freeMs`.
 */
export interface Handoffs {
  gapMs: number | readonly number[];
  freeMs?: number;
}

/** All windows of one simulated run, from one seeded generator. */
export function simulateRun(scenario: FifoScenario, handoffs: number | Handoffs, seed: number): ModelRun {
  const random = prng(seed);
  const { gapMs, freeMs = 0 } = typeof handoffs == "number" ? { gapMs: handoffs } : handoffs;
  const gap = typeof gapMs == "number" ? () => gapMs : () => gapMs[Math.floor(random() * gapMs.length)] ?? 0;
  const waits = Array.from({ length: scenario.windows }, () => simulateWindow(scenario, { gap, freeMs }, random)).flat();
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
export function fifoModel(scenario: FifoScenario, handoffs: number | Handoffs, runs = 200): FifoFigures {
  const all = Array.from({ length: runs }, (_, i) => simulateRun(scenario, handoffs, i + 1));
  const ratios = all.map((r) => r.ratio).sort((a, b) => a - b);
  const share = (test: (w: ModelWait) => boolean) => all.filter((r) => r.longest && test(r.longest)).length / runs;
  return {
    median: quantile(ratios, 0.5), low: quantile(ratios, 0.25), high: quantile(ratios, 0.75), runs,
    meanWaitMs: mean(all.map((r) => mean(r.waits.map((w) => w.ms)))),
    longestFirst: share((w) => w.first), longestCutOff: share((w) => w.cutOff),
  };
}
