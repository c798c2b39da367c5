import { totalCommands } from "../harness/commandstats.ts";
import { mean, round, summarize, type Summary } from "../harness/stats.ts";
import type { ContentionRun, Section } from "./contention.ts";

export interface WaitMetrics {
  /** Every acquire() wait, including those cut off by the end of the window. */
  waitMs: Summary;
  /** Longest single wait ÷ mean wait. */
  starvation: number;
  /**
   * Per client: requests sent inside acquire() beyond each call's first attempt, ÷ seconds spent
   * inside acquire(): the pressure a waiting client puts on the server. A client lives one run
   * (round); mean and max are over the clients of all runs.
   */
  requestsPerWaiterPerSec: { mean: number; max: number };
  /** The same with each call's first attempt counted too (short waits inflate it). */
  allRequestsPerAcquireSec: { mean: number; max: number };
  /** Fewest and most critical sections any one client got in one run (round). */
  sectionsPerClient: { min: number; max: number };
  /**
   * The most clients that called acquire() after a waiter and held the lock before it, in any one
   * wait: 0 in a strict line, whatever the wait's length. Calls that cross on the way to Redis count too.
   */
  mostOvertaken: number;
}

export interface ThroughputMetrics {
  sections: number;
  seconds: number;
  sectionsPerSec: number;
  redisCommandsPerSection: number;
  exhausted: number;
  streams: number;
}

export interface GapMetrics {
  /** From a holder starting release() to the next holder's acquire() resolving. */
  gapMs: Summary;
  gaps: number[];
  /**
   * The same, only where the next holder is another client that was already waiting when the
   * release began: a handoff to a waiter (with immediate rejoin the releaser often wins again).
   */
  toWaiterGapMs: Summary;
  toWaiterGaps: number[];
  /** Share of consecutive sections that were such handoffs. */
  changedHands: number;
  /** Next holder resolved before the previous one even started to release: must be 0. */
  overlaps: number;
}

/** Sections acquired inside the window, in the order they were acquired. */
function inWindow(run: ContentionRun): Section[] {
  return run.sections.filter((s) => s.acquiredAt <= run.end).sort((a, b) => a.acquiredAt - b.acquiredAt);
}

/** Adds up `value` over the runs (the rounds of one library). */
const sum = (runs: readonly ContentionRun[], value: (run: ContentionRun) => number) => runs.reduce((total, run) => total + value(run), 0);

export function throughputMetrics(runs: readonly ContentionRun[]): ThroughputMetrics {
  const sections = sum(runs, (run) => inWindow(run).length);
  const seconds = sum(runs, (run) => run.end - run.start) / 1000;
  return {
    sections,
    seconds: round(seconds),
    sectionsPerSec: round(sections / seconds, 1),
    redisCommandsPerSection: round(sum(runs, (run) => totalCommands(run.commands)) / Math.max(1, sum(runs, (run) => run.sections.length))),
    exhausted: sum(runs, (run) => run.exhausted),
    streams: sum(runs, (run) => run.streams),
  };
}

export function waitMetrics(runs: readonly ContentionRun[]): WaitMetrics {
  const perRun = runs.map((run) => [
    ...run.sections.map((s) => waitInWindow(run.end, s.client, s.waitStart, s.acquiredAt, s.requests)),
    ...run.censored.map((c) => waitInWindow(run.end, c.client, c.waitStart, c.abortedAt, c.requests)),
  ]);
  const waits = perRun.flat();
  // Rates per client of each run: client 3 of the next round is another connection with its own
  // state, and adding its waits to this one's would average a busy waiter down.
  const rate = (extraOnly: boolean) => runs.flatMap((run, i) => clientRates(perRun[i] ?? [], run.plan.clients, extraOnly));
  // Unrounded: the targets judge these, and rounding 5.04 to 5.0 would turn a miss into a pass.
  const spread = (values: number[]) => ({ mean: mean(values), max: Math.max(...values) });
  // Per run, for the same reason: summed by index over rounds, a client starved in one round and
  // another favoured in the next would look even.
  const counts = runs.flatMap((run) => {
    const sections = inWindow(run);
    return Array.from({ length: run.plan.clients }, (_, client) => sections.filter((s) => s.client === client).length);
  });
  const waitMs = summarize(waits.map((w) => w.ms));
  return {
    waitMs,
    starvation: waitMs.max / waitMs.mean,
    requestsPerWaiterPerSec: spread(rate(true)),
    allRequestsPerAcquireSec: spread(rate(false)),
    sectionsPerClient: { min: Math.min(...counts), max: Math.max(...counts) },
    mostOvertaken: Math.max(0, ...runs.map(mostOvertaken)),
  };
}

/** The most sections, in one run, that began after a wait and were acquired before it ended. */
function mostOvertaken(run: ContentionRun): number {
  const sections = inWindow(run);
  const waits = [...run.sections.map((s) => ({ client: s.client, start: s.waitStart, end: s.acquiredAt })),
    ...run.censored.map((c) => ({ client: c.client, start: c.waitStart, end: c.abortedAt }))];
  return Math.max(0, ...waits.map((w) => sections.filter((s) => s.client !== w.client && s.waitStart > w.start && s.acquiredAt < w.end).length));
}

type Wait = ReturnType<typeof waitInWindow>;

/** Each client's requests inside acquire() ÷ its seconds inside acquire(), over one run's waits. */
function clientRates(waits: readonly Wait[], clients: number, extraOnly: boolean): number[] {
  return Array.from({ length: clients }, (_, client) => {
    const mine = waits.filter((w) => w.client === client);
    const seconds = mine.reduce((total, w) => total + w.ms, 0) / 1000;
    const requests = mine.reduce((total, w) => total + (extraOnly ? Math.max(0, w.requests - 1) : w.requests), 0);
    return requests / Math.max(seconds, 1e-9);
  });
}

/**
 * A wait as far as the window's end. A library that takes no AbortSignal (@upstash/lock; redlock
 * between its batches of attempts) goes on waiting after it, with fewer rivals, where the others
 * are cut off: its wait counts to the window's end too, and its requests in proportion.
 */
function waitInWindow(end: number, client: number, start: number, until: number, requests: number) {
  const ms = Math.min(until, end) - start;
  return { client, ms, requests: until > end ? (requests * ms) / Math.max(until - start, 1e-9) : requests };
}

/** Gaps between consecutive sections of each run; none spans two runs. */
export function gapMetrics(runs: readonly ContentionRun[]): GapMetrics {
  const gaps: number[] = [];
  const toWaiterGaps: number[] = [];
  let overlaps = 0;
  for (const ordered of runs.map(inWindow)) {
    for (let i = 1; i < ordered.length; i++) {
      const previous = ordered[i - 1];
      const next = ordered[i];
      if (!previous || !next) continue;
      const gap = round(next.acquiredAt - previous.releaseStart, 3);
      if (gap < 0) overlaps += 1;
      gaps.push(gap);
      if (next.client !== previous.client && next.waitStart <= previous.releaseStart) toWaiterGaps.push(gap);
    }
  }
  return {
    gapMs: summarize(gaps), gaps, toWaiterGapMs: summarize(toWaiterGaps), toWaiterGaps,
    changedHands: round(toWaiterGaps.length / Math.max(1, gaps.length), 3), overlaps,
  };
}
