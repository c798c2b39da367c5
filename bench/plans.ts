// How long and how often each section of `npm run bench` measures; BENCH_QUICK=1 shortens every
// cell (for checking the harness, not for numbers).
import type { BenchResults } from "./report/results.ts";
import type { QuorumPlan } from "./scenarios/quorum.ts";
import type { TcpPlan } from "./scenarios/tcp.ts";

const quick = process.env.BENCH_QUICK === "1";
export const plans: BenchResults["plans"] = {
  uncontended: { warmMs: quick ? 200 : 500, durationMs: quick ? 600 : 4_000, rounds: quick ? 3 : 16, concurrency: 16, perCallSamples: quick ? 10 : 50 },
  // No wait outlasts its round: a 4 s round lets a wait show 10× the poll mean (~300-400 ms) and more.
  handoff: { clients: 8, durationMs: quick ? 1_500 : 8_000, rounds: quick ? 1 : 2, holdMs: 5 },
  scaling: { cellMs: quick ? 500 : 2_000, names: quick ? [1, 100, 1_000] : [1, 100, 10_000], namesClients: 16, contenders: [1, 8, 64], holdMs: 5 },
  requestFloor: { samples: quick ? 10 : 300, pauseMs: 5 },
  // 3 RTTs × 3 cells × 3 libraries × 4 rounds of 0.75 s, plus each cell's warm-up and what the
  // waiters of @upstash/lock (no AbortSignal) finish after it: about 3 minutes in all.
  latency: {
    rttsMs: quick ? [0, 20] : [0, 5, 20], rounds: quick ? 2 : 4, cellMs: quick ? 300 : 750, warmHoldMs: 50, holdMs: 5,
    handoffClients: 8, manyContenders: quick ? 16 : 64, pingsPerRound: quick ? 5 : 25, pauseMs: 5,
  },
};
export const quorumPlan: QuorumPlan = {
  nodeCounts: [3, 5],
  sequential: { warmMs: quick ? 200 : 1_000, msEach: quick ? 300 : 1_000, rounds: quick ? 2 : 8, countedCycles: quick ? 20 : 200 },
  concurrent: { clients: 16, warmMs: quick ? 200 : 500, durationMs: quick ? 400 : 4_000, rounds: quick ? 2 : 8 },
  contention: { clients: 8, holdMs: 5, durationMs: quick ? 1_000 : 6_000, rounds: quick ? 1 : 2, rejoins: ["immediate", "after-handoff"] },
};
/** Section 7 (issue 27): every library over ioredis to one redis-server; about 2.5 minutes. */
export const tcpPlan: TcpPlan = {
  uncontendedWarm: { warmMs: quick ? 200 : 500, durationMs: quick ? 200 : 2_000, rounds: 2, concurrency: 16, perCallSamples: 1 },
  uncontended: { warmMs: quick ? 200 : 500, durationMs: quick ? 600 : 4_000, rounds: quick ? 3 : 16, concurrency: 16, perCallSamples: quick ? 10 : 50 },
  contention: { clients: 8, holdMs: 5, roundMs: quick ? 500 : 2_000, rounds: quick ? 2 : 5, warmMs: quick ? 200 : 500, rejoins: ["immediate", "after-handoff"] },
  ping: { samples: quick ? 20 : 300, pauseMs: 5 },
};
/** Section 2: an untimed contended run per library first. */
export const HANDOFF_WARM_MS = 500;
/**
 * An untimed pass of section 1 first: a process still warming up ran its later rounds up to 3×
 * faster than its first (JIT, the server's and Redis' caches). Turn by turn the ratios were
 * fair anyway, but the absolute ops/s were not.
 */
export const UNCONTENDED_WARM = { durationMs: quick ? 200 : 2_000, rounds: 2, perCallSamples: 1 };
