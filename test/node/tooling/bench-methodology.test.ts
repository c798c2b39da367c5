// What `npm run bench` reports must be what it measured. None of these needs the local server:
// fake libraries and a fake INFO stand in, as the scenarios' arithmetic is what is tested.
import { describe, expect, it } from "vitest";
import type { Library, LockAdapter } from "../../../bench/adapters/types.ts";
import type { RedisStats } from "../../../bench/harness/commandstats.ts";
import { summarize } from "../../../bench/harness/stats.ts";
import { sleep } from "../../../bench/harness/timing.ts";
import { middleHalf, p99 } from "../../../bench/report/format.ts";
import { ratioWithSpread, withSpread } from "../../../bench/report/sections.ts";
import { connectionsTarget, latencyTargets } from "../../../bench/report/targets-latency.ts";
import { floorTarget } from "../../../bench/report/targets.ts";
import type { BenchResults } from "../../../bench/report/results.ts";
import { runContention, type ContentionRun } from "../../../bench/scenarios/contention.ts";
import type { LatencyResults } from "../../../bench/scenarios/latency.ts";
import { throughputMetrics, waitMetrics } from "../../../bench/scenarios/metrics.ts";
import type { Throughput } from "../../../bench/scenarios/uncontended.ts";
import { runScaling } from "../../../bench/scenarios/scaling.ts";

/** A lock that takes ~1 ms to acquire and never contends (each test keeps its clients apart). */
function fakeLibrary(seen: Set<string> = new Set()): Library {
  return {
    id: "fake",
    label: "fake",
    transport: "tcp",
    settings: "",
    connect: async (): Promise<LockAdapter<unknown>> => ({
      name: "fake",
      exhausted: 0,
      acquire: async (name: string) => {
        seen.add(name);
        await sleep(1);
        return name;
      },
      release: async () => undefined,
      close: async () => undefined,
    }),
  };
}

const noStats = { commands: async () => ({}) } as unknown as RedisStats;

describe("scaling over contenders", () => {
  // The 0–100 ms rejoin jitter keeps several clients out of step; alone, it would set the pace
  // (14.5–19 sections/s for every library, redlock included).
  it("one contender runs at the library's pace, not at the rejoin jitter's", async () => {
    const run = await runContention(
      fakeLibrary(),
      { clients: 1, durationMs: 400, holdMs: 0, rejoin: "after-handoff", pickName: () => "one" },
      noStats,
    );
    // ~1 ms a cycle: hundreds a second; with the 0–100 ms jitter about 20.
    expect(throughputMetrics([run]).sectionsPerSec).toBeGreaterThan(100);
  });
});

describe("scaling over distinct names", () => {
  // A 2 s cell does about 1,200 cycles: a round-robin over 10,000 names left most of them unused.
  it("puts every one of the N names in play in an N-names cell", async () => {
    const seen = new Set<string>();
    await runScaling(
      [fakeLibrary(seen)],
      [],
      { cellMs: 300, names: [10_000], namesClients: 16, contenders: [], holdMs: 0 },
      noStats,
    );
    expect([...seen].filter((name) => name.startsWith("scale:10000:")).length).toBe(10_000);
  });
});

describe("target check", () => {
  // A cell with no handoff to a waiter has p50 NaN, and `NaN <= 1.5` is false.
  it("reports a handoff p50 that could not be measured as not measured, not as missed", () => {
    const round = (handoffP50Ms: number) => ({
      sectionsPerSec: 30, handoffP50Ms, waitingRequestsPerSec: { mean: 1, max: 2 }, starvation: 1.5, mostOvertaken: 0, connections: 0, acquires: 100, overlaps: 0,
    });
    const ping = { pauseMs: 5, afterPauseMs: summarize([20]), backToBackMs: summarize([20]) };
    const row = (id: string, p50: number) => ({ cell: "2b" as const, clients: 8, id, label: id, rounds: [round(p50), round(p50)] });
    const results = {
      plan: { rttsMs: [20], rounds: 2, cellMs: 750, warmHoldMs: 50, holdMs: 5, handoffClients: 8, manyContenders: 64, pingsPerRound: 25, pauseMs: 5 },
      rtts: [{ rttMs: 20, pings: [ping, ping], rows: [row("fencelock-default", Number.NaN), row("upstash-lock", 40)] }],
      seconds: 1,
    } satisfies LatencyResults;
    const [, , handoff] = latencyTargets(results);
    expect(handoff?.text).toContain("PING");
    expect(handoff?.met).toBeNull();
    // And one that was measured is judged.
    results.rtts[0]!.rows[0] = row("fencelock-default", 25);
    expect(latencyTargets(results)[2]?.met).toBe(true);
  });
});

describe("the uncontended target", () => {
  const row = (id: string, sequential: number[], concurrent: number[]) => ({
    id,
    sequential: { clients: 1, opsPerSec: 999, roundOpsPerSec: sequential },
    concurrent: { clients: 16, opsPerSec: 999, roundOpsPerSec: concurrent },
  });
  const judge = (ours: number[]) =>
    floorTarget({ uncontended: [row("fencelock-default", ours, ours), row("raw-floor", [100, 100, 100, 100], [100, 100, 100, 100])] } as unknown as BenchResults);

  it("is judged at 0.95× on the middle half of the round-by-round ratios, not on one slow or fast round", () => {
    // A round slowed by the machine (50) or lucky (200) is dropped; the overall rate is another figure.
    expect(judge([95, 96, 50, 200]).met).toBe(true);
    expect(judge([94, 95, 50, 200]).met).toBe(false);
    expect(judge([95, 96, 50, 200]).detail).toMatch(/^sequential 0\.96×/);
  });
});

describe("the new-connections target", () => {
  const round = (connections: number, acquires: number) => ({
    sectionsPerSec: 30, handoffP50Ms: 5, waitingRequestsPerSec: { mean: 1, max: 2 }, starvation: 1.5, mostOvertaken: 0, connections, acquires, overlaps: 0,
  });
  const results = (rounds: ReturnType<typeof round>[]) =>
    ({
      plan: { rttsMs: [5], rounds: rounds.length, cellMs: 750, warmHoldMs: 50, holdMs: 5, handoffClients: 8, manyContenders: 64, pingsPerRound: 25, pauseMs: 5 },
      rtts: [{ rttMs: 5, pings: [], rows: [{ cell: "2b" as const, clients: 8, id: "fencelock-default", label: "fencelock", rounds }] }],
      seconds: 1,
    }) satisfies LatencyResults;

  it("counts new connections per acquire, at most 0.1, on the middle half of the rounds", () => {
    // One round that reconnected (a server hiccup) is dropped; one in ten acquires on a new connection is the limit.
    expect(connectionsTarget(results([round(0, 100), round(10, 100), round(60, 100), round(0, 100)])).met).toBe(true);
    expect(connectionsTarget(results([round(11, 100), round(11, 100), round(60, 100), round(11, 100)])).met).toBe(false);
    // A round with no acquire counts its connections whole, not as none.
    expect(connectionsTarget(results([round(1, 0), round(1, 0), round(1, 0), round(1, 0)])).met).toBe(false);
  });
});

/** A section of a contention run: the client, when it began to wait, and when it got the lock (ms). */
const section = (client: number, waitStart: number, acquiredAt: number, requests = 1) =>
  ({ client, waitStart, acquiredAt, releaseStart: acquiredAt + 5, releasedAt: acquiredAt + 6, requests, releaseRequests: 1 });

/** A contention run of these sections, `clients` of them, ending at `end` ms. */
const contentionRun = (sections: ReturnType<typeof section>[], clients = 3, end = 100) =>
  ({ plan: { clients, durationMs: end, rejoin: "after-handoff", holdMs: 5 }, start: 0, end, sections, censored: [], exhausted: 0, streams: 0, commands: {} }) as unknown as ContentionRun;

describe("fairness", () => {
  it("counts the later callers that held the lock during one wait: 0 for a strict line, however long the wait", () => {
    // In line: client 2 called last and waited longest.
    expect(waitMetrics([contentionRun([section(0, 0, 1), section(1, 2, 10), section(2, 3, 20)])]).mostOvertaken).toBe(0);
    // Client 0 called first, and both later callers held it before it did.
    expect(waitMetrics([contentionRun([section(1, 2, 10), section(2, 3, 20), section(0, 0, 30)])]).mostOvertaken).toBe(2);
  });
});

describe("verdicts", () => {
  // Rounded first (to 0.1), both read as met.
  it("are taken on unrounded figures: a longest wait 3.04× the mean is over 3×, 5.04 requests a second over 5", () => {
    const waits = waitMetrics([contentionRun([section(0, 0, 1), section(1, 0, 1), section(2, 0, 1), section(3, 0, 9.5)], 4)]);
    expect(waits.starvation).toBeGreaterThan(3);
    // Six requests in a 992 ms wait: five beyond the first.
    const busy = waitMetrics([contentionRun([section(0, 0, 992, 6)], 1, 1_000)]);
    expect(busy.requestsPerWaiterPerSec.max).toBeGreaterThan(5);
  });
});

describe("waiting requests", () => {
  it("count each waiter's requests beyond each call's first, per second inside acquire()", () => {
    // Client 0: two waits of 500 ms, 3 and 1 requests: 2 beyond the first in 1 s. Client 1: 4 in 250 ms.
    const run = contentionRun([section(0, 0, 500, 3), section(0, 500, 1_000, 1), section(1, 0, 250, 5)], 2, 1_000);
    expect(waitMetrics([run]).requestsPerWaiterPerSec).toEqual({ mean: (2 + 16) / 2, max: 16 });
  });
});

describe("the middle half of the rounds", () => {
  it("drops a quarter of the rounds at each end", () => {
    expect(middleHalf([100, 1, 3, 2]).mean).toBe(2.5);
    expect(middleHalf([1, 2, 3, 4, 5, 6, 10, 100]).mean).toBe(4.5);
  });

  // The headers say "middle half of rounds"; the overall rate (here 999) is another figure.
  it("is what the uncontended table prints, for rates and for ratios round by round", () => {
    const rounds = (roundOpsPerSec: number[]) => ({ opsPerSec: 999, roundOpsPerSec }) as unknown as Throughput;
    expect(withSpread(rounds([50, 150, 100, 100]))).toBe("100.0 (87.5–112.5)");
    expect(ratioWithSpread(rounds([50, 150, 100, 100]), rounds([100, 100, 200, 200]))).toBe("0.50× (0.50–0.75×)");
  });
});

describe("tables", () => {
  it("show a p99 only from 100 samples or more: under that it is no more than the largest", () => {
    const ms = (n: number) => summarize(Array.from({ length: n }, (_, i) => i + 1));
    expect(p99(ms(99))).toBe("n/a");
    expect(p99(ms(100))).toBe("99.0");
  });
});
