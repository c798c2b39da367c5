// The TCP section (issue 27): fencelock through fromIoredis next to redis-semaphore's Mutex, redlock
// and a raw SET NX PX floor, all over ioredis to the same standalone redis-server: like for like.
import { loadavg } from "node:os";
import { Redis as IORedis } from "ioredis";
import { fencelockScriptsTcpLibrary } from "../adapters/fencelock-scripts.ts";
import { fencelockTcpLibrary } from "../adapters/fencelock-tcp.ts";
import { pingPairs } from "./request-floor.ts";
import { rawFloorTcpLibrary } from "../adapters/raw-floor-tcp.ts";
import { redisSemaphoreLibrary } from "../adapters/redis-semaphore.ts";
import { redlockLibrary } from "../adapters/redlock.ts";
import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import type { Endpoint } from "../harness/server.ts";
import { round, shuffled, type Summary } from "../harness/stats.ts";
import { collectGarbage, now, progress } from "../harness/timing.ts";
import type { LibraryInfo } from "../report/results.ts";
import { runContention, type ContentionRun, type Rejoin } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics, type ThroughputMetrics, type WaitMetrics } from "./metrics.ts";
import { runUncontended, type UncontendedPlan, type UncontendedRow } from "./uncontended.ts";

export interface TcpContentionPlan {
  clients: number;
  holdMs: number;
  /** One timed run per library, rejoin mode and round; the libraries in a new random order each round. */
  roundMs: number;
  rounds: number;
  /** An untimed run per library first: a process's first contended run was 1.5-2× slower than its later ones. */
  warmMs: number;
  rejoins: Rejoin[];
}

export interface TcpPlan {
  /** Untimed first, with the same libraries: JIT, connections, Redis' script cache. */
  uncontendedWarm: UncontendedPlan;
  uncontended: UncontendedPlan;
  contention: TcpContentionPlan;
  /** A PING on an ioredis connection after `pauseMs` of quiet (a hold), then one more at once. */
  ping: { samples: number; pauseMs: number };
}

export type TcpContendedRow = { id: string; label: string; rejoin: Rejoin; roundSectionsPerSec: number[] } & ThroughputMetrics & WaitMetrics & {
  gapMs: Summary;
  toWaiterGapMs: Summary;
  /** Every handoff to a waiter, ms: the fairness model draws from them. */
  toWaiterGaps: number[];
  changedHands: number;
  overlaps: number;
  /** Commands sent inside acquire() and release() per critical section (cut-off waits included). */
  requestsPerSection: number;
};

export interface TcpResults {
  plan: TcpPlan;
  libraries: LibraryInfo[];
  uncontended: UncontendedRow[];
  contention: TcpContendedRow[];
  ping: { afterPauseMs: Summary; backToBackMs: Summary };
  /** os.loadavg() (1, 5, 15 min) when the section began and ended: others share this machine. */
  load: { before: number[]; after: number[] };
  seconds: number;
}

export const TCP_OURS = "fencelock-tcp";
export const TCP_FLOOR = "raw-floor-tcp";
export const TCP_SCRIPTS_ALONE = "fencelock-scripts-tcp";

export async function runTcp(endpoint: Endpoint, stats: RedisStats, plan: TcpPlan): Promise<TcpResults> {
  const started = now();
  const before = loadavg().map((n) => round(n, 2));
  const ours = fencelockTcpLibrary(endpoint);
  const peers = [redisSemaphoreLibrary(endpoint), redlockLibrary(endpoint)];
  const floor = rawFloorTcpLibrary(endpoint);
  // Our scripts without the library: how much of the gap to the peers is Redis work, how much the client.
  const uncontendedLibraries = [ours, ...peers, floor, fencelockScriptsTcpLibrary(endpoint)];
  progress("tcp: uncontended, an untimed warm-up pass");
  await runUncontended(uncontendedLibraries, plan.uncontendedWarm, stats);
  const uncontended = await runUncontended(uncontendedLibraries, plan.uncontended, stats);
  await stats.flush();
  const ping = await pings(endpoint.redisUrl, plan.ping);
  const contention = await runTcpContention([ours, ...peers], plan.contention, stats);
  await stats.flush();
  return {
    plan,
    libraries: uncontendedLibraries.map(({ id, label, transport, settings }) => ({ id, label, transport, settings })),
    uncontended, contention, ping,
    load: { before, after: loadavg().map((n) => round(n, 2)) },
    seconds: round((now() - started) / 1000, 1),
  };
}

async function runTcpContention(libraries: Library[], plan: TcpContentionPlan, stats: RedisStats): Promise<TcpContendedRow[]> {
  const rows: TcpContendedRow[] = [];
  const run = (library: Library, rejoin: Rejoin, durationMs: number) =>
    runContention(library, { clients: plan.clients, durationMs, holdMs: plan.holdMs, rejoin, pickName: () => `tcp:${rejoin}` }, stats);
  progress(`tcp: contention, an untimed ${plan.warmMs} ms per library`);
  for (const library of shuffled(libraries)) {
    collectGarbage();
    await run(library, "immediate", plan.warmMs);
  }
  for (const rejoin of plan.rejoins) {
    const runs = new Map<Library, ContentionRun[]>(libraries.map((l) => [l, []]));
    for (let r = 0; r < plan.rounds; r++) {
      for (const library of shuffled(libraries)) {
        progress(`tcp: contention (${rejoin} rejoin), round ${r + 1} of ${plan.rounds}, ${library.label}, ${plan.clients} clients, ${plan.roundMs / 1000} s`);
        // No library starts with the garbage of the one before it.
        collectGarbage();
        runs.get(library)?.push(await run(library, rejoin, plan.roundMs));
      }
    }
    for (const library of libraries) {
      const mine = runs.get(library) ?? [];
      const { gapMs, toWaiterGapMs, toWaiterGaps, changedHands, overlaps } = gapMetrics(mine);
      const sections = mine.reduce((sum, one) => sum + one.sections.length, 0);
      const requests = mine.reduce((sum, one) => sum + one.sections.reduce((s, x) => s + x.requests + x.releaseRequests, 0) +
        one.censored.reduce((s, c) => s + c.requests, 0), 0);
      rows.push({
        id: library.id, label: library.label, rejoin,
        roundSectionsPerSec: mine.map((one) => throughputMetrics([one]).sectionsPerSec),
        ...throughputMetrics(mine), ...waitMetrics(mine), gapMs, toWaiterGapMs, toWaiterGaps, changedHands, overlaps,
        requestsPerSection: round(requests / Math.max(1, sections)),
      });
    }
  }
  return rows;
}

/** A yardstick for the handoff over TCP: a PING after a hold's quiet, and one right after it. */
async function pings(redisUrl: string, plan: TcpPlan["ping"]): Promise<TcpResults["ping"]> {
  progress(`tcp: ${plan.samples} PINGs after a ${plan.pauseMs} ms pause, each followed by one more`);
  const client = new IORedis(redisUrl, { lazyConnect: true });
  await client.connect();
  try {
    return await pingPairs(() => client.ping(), plan);
  } finally {
    await client.quit();
  }
}
