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
   * inside acquire(): the pressure a waiting client puts on the server.
   */
  requestsPerWaiterPerSec: { mean: number; max: number };
  /** The same with each call's first attempt counted too (short waits inflate it). */
  allRequestsPerAcquireSec: { mean: number; max: number };
  sectionsPerClient: { min: number; max: number };
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

export function throughputMetrics(run: ContentionRun): ThroughputMetrics {
  const sections = inWindow(run).length;
  const seconds = (run.end - run.start) / 1000;
  return {
    sections,
    seconds: round(seconds),
    sectionsPerSec: round(sections / seconds, 1),
    redisCommandsPerSection: round(totalCommands(run.commands) / Math.max(1, run.sections.length)),
    exhausted: run.exhausted,
    streams: run.streams,
  };
}

export function waitMetrics(run: ContentionRun): WaitMetrics {
  const waits = [
    ...run.sections.map((s) => waitInWindow(run.end, s.client, s.waitStart, s.acquiredAt, s.requests)),
    ...run.censored.map((c) => waitInWindow(run.end, c.client, c.waitStart, c.abortedAt, c.requests)),
  ];
  const rate = (extraOnly: boolean) => Array.from({ length: run.plan.clients }, (_, client) => {
    const mine = waits.filter((w) => w.client === client);
    const seconds = mine.reduce((sum, w) => sum + w.ms, 0) / 1000;
    const requests = mine.reduce((sum, w) => sum + (extraOnly ? Math.max(0, w.requests - 1) : w.requests), 0);
    return requests / Math.max(seconds, 1e-9);
  });
  const spread = (values: number[]) => ({ mean: round(mean(values), 1), max: round(Math.max(...values), 1) });
  const counts = Array.from({ length: run.plan.clients }, (_, client) => inWindow(run).filter((s) => s.client === client).length);
  const waitMs = summarize(waits.map((w) => w.ms));
  return {
    waitMs,
    starvation: round(waitMs.max / waitMs.mean, 1),
    requestsPerWaiterPerSec: spread(rate(true)),
    allRequestsPerAcquireSec: spread(rate(false)),
    sectionsPerClient: { min: Math.min(...counts), max: Math.max(...counts) },
  };
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

export function gapMetrics(run: ContentionRun): GapMetrics {
  const ordered = inWindow(run);
  const gaps: number[] = [];
  const toWaiterGaps: number[] = [];
  let overlaps = 0;
  for (let i = 1; i < ordered.length; i++) {
    const previous = ordered[i - 1];
    const next = ordered[i];
    if (!previous || !next) continue;
    const gap = round(next.acquiredAt - previous.releaseStart, 3);
    if (gap < 0) overlaps += 1;
    gaps.push(gap);
    if (next.client !== previous.client && next.waitStart <= previous.releaseStart) toWaiterGaps.push(gap);
  }
  return {
    gapMs: summarize(gaps), gaps, toWaiterGapMs: summarize(toWaiterGaps), toWaiterGaps,
    changedHands: round(toWaiterGaps.length / Math.max(1, gaps.length), 3), overlaps,
  };
}
