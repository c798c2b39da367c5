// One cell of the realistic-latency scenario for one library: clients warmed up untimed, then the
// timed stretch, counting the connections the delay proxy accepted on the cell's own port meanwhile.
import type { Library, LockAdapter } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import type { Route } from "../harness/delay-proxy.ts";
import { sleep } from "../harness/timing.ts";
import { runContention, type ContentionRun, type Rejoin } from "./contention.ts";
import { gapMetrics, throughputMetrics, waitMetrics } from "./metrics.ts";

export interface LatencyCellPlan {
  clients: number;
  rejoin: Rejoin;
  holdMs: number;
  /** In the warm-up before the timed stretch, how long a client holds the lock while its partner waits. */
  warmHoldMs: number;
  cellMs: number;
  name: string;
}

/** What one library did in one cell and round. */
export interface LatencyRound {
  sectionsPerSec: number;
  /** Handoffs to a client that was already waiting (NaN when there were none). */
  handoffP50Ms: number;
  waitingRequestsPerSec: { mean: number; max: number };
  /** Longest single wait ÷ mean wait. */
  starvation: number;
  /** The most later callers that held the lock during one wait (see WaitMetrics). */
  mostOvertaken: number;
  /** Connections the proxy accepted during the timed stretch, and the acquires in it. */
  connections: number;
  acquires: number;
  overlaps: number;
}

/**
 * The clients warm up in pairs first, each waiting once for the other, so that what a warm client
 * keeps open (keep-alive connections, a lock set's shared stream) is open when the timed stretch
 * starts, and the new connections counted are those a warm client still opens. `library` must be
 * made for `route`'s endpoint: a port of its own, where no other cell's clients (or their streams
 * closing after it) can open connections that would count here.
 */
export async function runLatencyCell(library: Library, plan: LatencyCellPlan, route: Route, stats: Pick<RedisStats, "commands">): Promise<LatencyRound> {
  const adapters: Array<LockAdapter<unknown>> = [];
  try {
    for (let i = 0; i < plan.clients; i++) adapters.push(await library.connect());
    await warmInPairs(adapters, plan.warmHoldMs, `${plan.name}:warm`);
    const marks: number[] = [];
    // runContention reads the command counts right before its timed window and once its last
    // client is done: the proxy's count is read at the same two moments.
    const counting = {
      commands: async () => {
        marks.push(await route.connections());
        return stats.commands();
      },
    };
    const run = await runContention(lending(library, adapters), {
      clients: plan.clients, holdMs: plan.holdMs, rejoin: plan.rejoin, pickName: () => plan.name, durationMs: plan.cellMs,
    }, counting);
    const [before, after] = marks;
    if (marks.length !== 2 || before === undefined || after === undefined) throw new Error(`expected 2 connection counts, got ${marks.length}`);
    return figures(run, after - before);
  } finally {
    await Promise.allSettled(adapters.map((adapter) => adapter.close()));
  }
}

/**
 * Client 2k and 2k + 1 share a name: one holds it for `holdMs` (long enough for the other to find
 * it busy and start waiting), hands it over, and then waits for it in turn. All pairs at once, so
 * the pool has as many connections as the cell will use; an odd one out pairs with client 0 after.
 * Not a stretch of the cell itself: the waiters of a library that takes no AbortSignal would have
 * to be served to the last before the timed stretch could begin.
 */
async function warmInPairs(adapters: ReadonlyArray<LockAdapter<unknown>>, holdMs: number, name: string): Promise<void> {
  const pairs: Array<[LockAdapter<unknown>, LockAdapter<unknown>]> = [];
  for (let i = 0; i + 1 < adapters.length; i += 2) pairs.push([adapters[i] as LockAdapter<unknown>, adapters[i + 1] as LockAdapter<unknown>]);
  await Promise.all(pairs.map(([a, b], k) => waitForEachOther(a, b, holdMs, `${name}:${k}`)));
  const [first] = adapters;
  const odd = adapters.length % 2 === 1 ? adapters.at(-1) : undefined;
  if (first && odd && odd !== first) await waitForEachOther(first, odd, holdMs, `${name}:odd`);
}

async function waitForEachOther(a: LockAdapter<unknown>, b: LockAdapter<unknown>, holdMs: number, name: string): Promise<void> {
  const first = await a.acquire(name);
  const bWaits = b.acquire(name);
  await sleep(holdMs);
  await a.release(first);
  const second = await bWaits;
  const aWaits = a.acquire(name);
  await sleep(holdMs);
  await b.release(second);
  await a.release(await aWaits);
}

/** The library, its connect() handing out the given adapters in turn, lent: their close() does nothing. */
function lending(library: Library, adapters: ReadonlyArray<LockAdapter<unknown>>): Library {
  let next = 0;
  return {
    ...library,
    connect: async () => {
      const adapter = adapters[next++];
      if (!adapter) throw new Error("more clients asked for than were connected");
      return {
        name: adapter.name,
        get exhausted() {
          return adapter.exhausted;
        },
        acquire: (name: string, signal?: AbortSignal) => adapter.acquire(name, signal),
        release: (handle: unknown) => adapter.release(handle),
        close: async () => undefined,
      };
    },
  };
}

function figures(run: ContentionRun, connections: number): LatencyRound {
  const waits = waitMetrics([run]);
  const gaps = gapMetrics([run]);
  return {
    sectionsPerSec: throughputMetrics([run]).sectionsPerSec,
    handoffP50Ms: gaps.toWaiterGapMs.p50,
    waitingRequestsPerSec: waits.requestsPerWaiterPerSec,
    starvation: waits.starvation,
    mostOvertaken: waits.mostOvertaken,
    connections,
    acquires: run.sections.length,
    overlaps: gaps.overlaps,
  };
}

/** New connections per acquire in one round (unrounded: a target judges it). */
export const connectionsPerAcquire = (r: LatencyRound): number => r.connections / Math.max(1, r.acquires);
