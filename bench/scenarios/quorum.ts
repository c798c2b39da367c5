// The quorum bench (issue 25): fencelock in quorum mode over N = 3 and 5 nodes, against fencelock
// on one of those nodes and node-redlock over TCP to the same redis-servers.
import { Redis as IORedis } from "ioredis";
import { lockKeys } from "../../test/support/lock-keys.ts";
import { fencelockNodesLibrary, redlockNodesLibrary, type QuorumBenchLibrary } from "../adapters/quorum.ts";
import type { Anomalies } from "../adapters/quorum-recorder.ts";
import { NodesStats, startNodes } from "../harness/quorum-nodes.ts";
import { installScriptCounter } from "../harness/script-calls.ts";
import type { Endpoint } from "../harness/server.ts";
import { round, shuffled, type Summary } from "../harness/stats.ts";
import { collectGarbage, now, progress } from "../harness/timing.ts";
import type { LibraryInfo } from "../report/results.ts";
import { runContention, type ContentionRun, type Rejoin } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics, type ThroughputMetrics, type WaitMetrics } from "./metrics.ts";
import { runQuorumConcurrent, type ConcurrentRow, type QuorumConcurrentPlan } from "./quorum-concurrent.ts";
import type { RoundTrips } from "./quorum-round-trips.ts";
import { roundsOf, type Rounds } from "./quorum-rounds.ts";
import { runQuorumSequential, type CountedRow, type SequentialEntry, type QuorumSequentialPlan } from "./quorum-sequential.ts";
import type { SequentialRow } from "./quorum-sequential-row.ts";

export interface QuorumContentionPlan {
  clients: number;
  holdMs: number;
  /** Per library and rejoin mode, split over the rounds. */
  durationMs: number;
  rounds: number;
  rejoins: Rejoin[];
}

export interface QuorumPlan {
  nodeCounts: number[];
  sequential: QuorumSequentialPlan;
  concurrent: QuorumConcurrentPlan;
  contention: QuorumContentionPlan;
}

export type ContendedRow = { id: string; rejoin: Rejoin } & ThroughputMetrics & WaitMetrics & {
  gapMs: Summary;
  toWaiterGapMs: Summary;
  changedHands: number;
  overlaps: number;
  /** Requests inside acquire() and release() per critical section (cut-off waits included). */
  requestsPerSection: number;
  rounds: Rounds | null;
};

export interface QuorumGroup {
  nodes: number;
  majority: number;
  libraries: LibraryInfo[];
  roundTrips: RoundTrips;
  sequential: SequentialRow[];
  counted: CountedRow[];
  concurrent: ConcurrentRow[];
  contention: ContendedRow[];
  anomalies: Array<{ id: string } & Anomalies>;
}

export interface QuorumResults {
  plan: QuorumPlan;
  /** redis_version of the nodes. */
  redis: string;
  groups: QuorumGroup[];
  seconds: number;
}

export async function runQuorum(plan: QuorumPlan): Promise<QuorumResults> {
  const started = now();
  const most = Math.max(...plan.nodeCounts);
  progress(`quorum: starting ${most} nodes (a redis-server and a local server each, in a child process each)`);
  const servers = await startNodes(most);
  const stats = new NodesStats(servers.map((s) => s.redisUrl));
  const restoreFetch = installScriptCounter();
  const groups: QuorumGroup[] = [];
  let redis = "unknown";
  try {
    redis = await stats.version();
    for (const n of plan.nodeCounts) {
      const endpoints = servers.slice(0, n);
      await stats.flush();
      const libraries = [fencelockNodesLibrary(endpoints, `bq${n}`), fencelockNodesLibrary(endpoints.slice(0, 1), `bs${n}`), redlockNodesLibrary(endpoints)];
      const forced = await forcedWriteBack(endpoints, `bq${n}`);
      let sequential: Awaited<ReturnType<typeof runQuorumSequential>>;
      try {
        sequential = await runQuorumSequential([...libraries.map((library) => ({ library })), forced.entry], endpoints, plan.sequential, stats);
      } finally {
        await forced.close();
      }
      const { rows, roundTrips, counted } = sequential;
      const concurrent = await runQuorumConcurrent(libraries, plan.concurrent, n);
      const contention = await runQuorumContention(libraries, plan.contention, stats, n);
      groups.push({
        nodes: n,
        majority: Math.floor(n / 2) + 1,
        libraries: [...libraries, forced.entry.library].map(({ id, label, transport, settings }) => ({ id, label, transport, settings })),
        roundTrips, sequential: rows, counted, concurrent, contention,
        anomalies: [...libraries, forced.entry.library].map((l) => ({ id: l.id, ...l.anomalies() })),
      });
    }
  } finally {
    restoreFetch();
    await stats.close();
    await Promise.allSettled(servers.map((s) => s.close()));
  }
  return { plan, redis, groups, seconds: round((now() - started) / 1000, 1) };
}

/** How far ahead of the client's proposal (1 s ahead of its clock) node 1's seeded fence is. */
const SEED_AHEAD_US = 5_000_000;

/**
 * The write-back path, timed: before each cycle node 1 is made to remember a fence for a new name
 * well above what the client will propose (as after its clock ran ahead), so whenever node 1 is
 * among the first majority to grant, the quorum's fence is node 1's and the others adopt it.
 */
async function forcedWriteBack(endpoints: readonly Endpoint[], prefix: string): Promise<{ entry: SequentialEntry; close(): Promise<void> }> {
  const seeder = new IORedis(endpoints[0]!.redisUrl, { lazyConnect: true });
  await seeder.connect();
  const library = fencelockNodesLibrary(endpoints, prefix, {
    id: `fencelock-quorum-${endpoints.length}-ahead`,
    label: `fencelock quorum (N = ${endpoints.length}), node 1 ahead`,
    note: "as fencelock quorum, but each cycle takes a new name for which node 1 was first given (untimed, over TCP) a last " +
      `fence ${SEED_AHEAD_US / 1_000_000} s above the client's clock, which is what the client proposes: a write-back whenever node 1 is in the first majority`,
  });
  let next = 0;
  const name = async () => {
    const lock = `qs:ahead:${next++}`;
    const seeded = Math.floor((performance.timeOrigin + performance.now()) * 1000) + SEED_AHEAD_US;
    await seeder.hset(lockKeys(prefix, lock).fence, "last", String(seeded));
    await seeder.pexpire(lockKeys(prefix, lock).fence, 120_000);
    return lock;
  };
  return { entry: { library, name, uncounted: true }, close: async () => void (await seeder.quit()) };
}

/** `clients` contenders on one name per library and rejoin mode, the libraries in a random order each round. */
async function runQuorumContention(libraries: QuorumBenchLibrary[], plan: QuorumContentionPlan, stats: NodesStats, nodes: number): Promise<ContendedRow[]> {
  const rows: ContendedRow[] = [];
  const durationMs = plan.durationMs / plan.rounds;
  for (const rejoin of plan.rejoins) {
    const runs = new Map(libraries.map((l) => [l, [] as ContentionRun[]]));
    for (const l of libraries) l.take();
    const records = new Map(libraries.map((l) => [l, [] as ReturnType<QuorumBenchLibrary["take"]>]));
    for (let r = 0; r < plan.rounds; r++) {
      for (const library of shuffled(libraries)) {
        progress(`quorum N = ${nodes}: contention (${rejoin} rejoin), round ${r + 1} of ${plan.rounds}, ${library.label}, ${plan.clients} clients, ${durationMs / 1000} s`);
        collectGarbage();
        library.take();
        const run = await runContention(library, { clients: plan.clients, durationMs, holdMs: plan.holdMs, rejoin, pickName: () => `qx:${rejoin}` }, stats);
        runs.get(library)!.push(run);
        // Only the contended name: withClients' warm-up cycles (names of their own) are recorded too.
        records.get(library)!.push(...library.take().filter((record) => record.name === `qx:${rejoin}`));
      }
    }
    for (const library of libraries) {
      const mine = runs.get(library)!;
      const gaps = gapMetrics(mine);
      const sections = mine.reduce((sum, run) => sum + run.sections.length, 0);
      const requests = mine.reduce((sum, run) => sum + run.sections.reduce((s, x) => s + x.requests + x.releaseRequests, 0) +
        run.censored.reduce((s, c) => s + c.requests, 0), 0);
      rows.push({
        id: library.id, rejoin, ...throughputMetrics(mine), ...waitMetrics(mine),
        gapMs: gaps.gapMs, toWaiterGapMs: gaps.toWaiterGapMs, changedHands: gaps.changedHands, overlaps: gaps.overlaps,
        requestsPerSection: round(requests / Math.max(1, sections)),
        rounds: library.fenced ? roundsOf(records.get(library)!, library.nodes) : null,
      });
    }
  }
  return rows;
}
