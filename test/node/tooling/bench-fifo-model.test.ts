// The model of 2b under an ideal strict-FIFO lock (bench/scenarios/fifo-model.ts), checked on cases
// worked out by hand. Pure arithmetic on simulated time: nothing here sleeps or reads a clock.
import { describe, expect, it } from "vitest";
import { REJOIN_JITTER_MS } from "../../../bench/scenarios/contention.ts";
import { fifoModel, longestOverMean, simulateRun, simulateWindow, type FifoScenario } from "../../../bench/scenarios/fifo-model.ts";

/** A random source that plays `values` in turn, then repeats the last. */
function scripted(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0;
}

const scenario: FifoScenario = { clients: 8, holdMs: 5, windowMs: 90, windows: 1 };

describe("the FIFO model of 2b", () => {
  it("one client never waits on a perfect handoff, and calls again at once (no jitter alone)", () => {
    const waits = simulateWindow({ clients: 1, holdMs: 5, windowMs: 100, windows: 1 }, 0, scripted(0.5));
    expect(waits.map((w) => w.start)).toEqual(Array.from({ length: 20 }, (_, k) => 5 * k));
    expect(waits.every((w) => w.ms === 0)).toBe(true);
  });

  it("clients calling together wait 0, s, 2s, … in a strict line, s = hold + handoff", () => {
    // The 8 opening jitters are 0; the rejoins come 99 ms later, after this 90 ms window.
    for (const gapMs of [0, 1]) {
      const waits = simulateWindow(scenario, gapMs, scripted(0, 0, 0, 0, 0, 0, 0, 0, 0.99));
      expect(waits.map((w) => w.client)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(waits.map((w) => w.ms)).toEqual(Array.from({ length: 8 }, (_, k) => k * (5 + gapMs)));
      expect(waits.every((w) => w.first && !w.cutOff)).toBe(true);
    }
  });

  it("a pure burst of n in a strict line gives longest ÷ mean = (n-1)s ÷ ((n-1)s/2) = 2", () => {
    for (const clients of [3, 8]) {
      const waits = simulateWindow({ ...scenario, clients }, 0, scripted(...Array<number>(clients).fill(0), 0.99));
      expect(longestOverMean(waits).ratio).toBe(2);
    }
  });

  it("a client that rejoins at the handoff waits behind the other seven; waits left at the window's end count up to it", () => {
    // All jitters 0: client k holds at 5k and calls again at 5(k+1), as client k+1 takes the lock.
    const waits = simulateWindow({ ...scenario, windowMs: 100 }, 0, scripted(0));
    const later = waits.filter((w) => !w.first);
    expect(later.filter((w) => !w.cutOff).every((w) => w.ms === 35)).toBe(true);
    // Calls at 70…95 ms would be served at 105…130 ms: cut off at 100 ms.
    const cut = later.filter((w) => w.cutOff);
    expect(cut.map((w) => w.start)).toEqual([70, 75, 80, 85, 90, 95]);
    expect(cut.map((w) => w.ms)).toEqual([30, 25, 20, 15, 10, 5]);
  });

  it("serves callers in the order they called, first calls within the opening jitter", () => {
    const run = simulateRun({ clients: 8, holdMs: 5, windowMs: 2_000, windows: 1 }, 0.5, 3);
    const served = run.waits.map((w) => w.start + w.ms);
    expect(run.waits.map((w) => w.start)).toEqual([...run.waits.map((w) => w.start)].sort((a, b) => a - b));
    expect(served).toEqual([...served].sort((a, b) => a - b));
    const first = run.waits.filter((w) => w.first);
    expect(first).toHaveLength(8);
    expect(first.every((w) => w.start >= 0 && w.start < REJOIN_JITTER_MS)).toBe(true);
  });

  it("takes a free lock in freeMs, and a held one a drawn handoff after its release", () => {
    const alone = simulateWindow({ clients: 1, holdMs: 5, windowMs: 60, windows: 1 }, { gap: () => 100, freeMs: 1 }, scripted(0.5));
    // Free every time: each call waits 1 ms, and the next comes at its release 5 ms later.
    expect(alone.map((w) => w.start)).toEqual(Array.from({ length: 10 }, (_, k) => 6 * k));
    expect(alone.every((w) => w.ms === 1)).toBe(true);
    // Drawn gaps: each caller that found the lock held gets it 2 or 9 ms after the holder before it released.
    const { waits } = simulateRun({ ...scenario, windowMs: 2_000 }, { gapMs: [2, 9], freeMs: 1 }, 5);
    const acquiredAt = waits.map((w) => w.start + w.ms);
    const handoffs = waits.flatMap((w, i) => (i > 0 && !w.cutOff && w.start < (acquiredAt[i - 1] ?? 0) + 5 ? [(acquiredAt[i] ?? 0) - (acquiredAt[i - 1] ?? 0) - 5] : []));
    expect(new Set(handoffs.map((g) => Math.round(g * 1e6) / 1e6))).toEqual(new Set([2, 9]));
  });

  it("is deterministic per seed, and seeds differ", () => {
    const s: FifoScenario = { clients: 8, holdMs: 5, windowMs: 1_000, windows: 2 };
    expect(simulateRun(s, 0.4, 11)).toEqual(simulateRun(s, 0.4, 11));
    expect(simulateRun(s, 0.4, 12).ratio).not.toBe(simulateRun(s, 0.4, 11).ratio);
    expect(fifoModel(s, 0, 20)).toEqual(fifoModel(s, 0, 20));
    const m = fifoModel(s, 0, 20);
    expect(m.low).toBeLessThanOrEqual(m.median);
    expect(m.median).toBeLessThanOrEqual(m.high);
  });
});
