// The realistic-latency scenario (issue 26): the HTTP libraries through a delay proxy at a few
// round-trip times, each new connection charged two round trips as a TLS handshake costs.
import type { Library } from "../adapters/types.ts";
import type { RedisStats } from "../harness/commandstats.ts";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.ts";
import type { Endpoint } from "../harness/server.ts";
import { shuffled } from "../harness/stats.ts";
import { collectGarbage, now, progress, sleep } from "../harness/timing.ts";
import type { Rejoin } from "./contention.ts";
import { runLatencyCell, type LatencyRound } from "./latency-cell.ts";
import { runRequestFloor, type RequestFloor } from "./request-floor.ts";

export interface LatencyPlan {
  rttsMs: number[];
  /** Each round runs every cell for every library, the libraries in a new random order per cell. */
  rounds: number;
  /** Timed stretch per library, cell and round. */
  cellMs: number;
  /** Before each timed stretch, untimed, each client waits once for another that holds the lock this long + 2 RTT. */
  warmHoldMs: number;
  holdMs: number;
  /** Clients in 2a and 2b (2b is also the cell of 8 contenders: the same setup). */
  handoffClients: number;
  manyContenders: number;
  /** PINGs per round, each after `pauseMs` of quiet and followed by one more. */
  pingsPerRound: number;
  pauseMs: number;
}

export type LatencyCellId = "2a" | "2b" | "many";

export interface LatencyRow {
  cell: LatencyCellId;
  clients: number;
  id: string;
  label: string;
  rounds: LatencyRound[];
}

export interface LatencyAtRtt {
  rttMs: number;
  /** PINGs through the same proxy and server, one batch per round (before that round's cells). */
  pings: RequestFloor[];
  rows: LatencyRow[];
}

export interface LatencyResults {
  plan: LatencyPlan;
  rtts: LatencyAtRtt[];
  seconds: number;
}

/** A library made for an endpoint: here, the proxy's. */
export type LibraryAt = (endpoint: Endpoint) => Library;

interface Cell {
  id: LatencyCellId;
  clients: number;
  rejoin: Rejoin;
}

function cells(plan: LatencyPlan): Cell[] {
  return [
    { id: "2a", clients: plan.handoffClients, rejoin: "immediate" },
    { id: "2b", clients: plan.handoffClients, rejoin: "after-handoff" },
    { id: "many", clients: plan.manyContenders, rejoin: "after-handoff" },
  ];
}

/**
 * A lock set's stream stays open 2 s after its last wait (src/waiting/wake-channel.ts): the proxies
 * outlive the section by a little more, so that no stream is cut off (each cut one logs an error).
 */
const LINGER_MS = 2_500;

/** Every RTT in turn, each behind a proxy process of its own, so no connection is ever charged another RTT. */
export async function runLatency(libraries: LibraryAt[], endpoint: Endpoint, plan: LatencyPlan, stats: Pick<RedisStats, "commands">): Promise<LatencyResults> {
  const started = now();
  const makers = libraries.map((make) => ({ make, id: make(endpoint).id, label: make(endpoint).label }));
  const rtts: LatencyAtRtt[] = [];
  const proxies: DelayProxy[] = [];
  try {
    for (const rttMs of plan.rttsMs) {
      const proxy = await startDelayProxy(endpoint, rttMs);
      proxies.push(proxy);
      rtts.push(await atRtt(proxy, makers, plan, stats));
    }
    const seconds = Math.round((now() - started) / 100) / 10;
    await sleep(LINGER_MS);
    return { plan, rtts, seconds };
  } finally {
    await Promise.allSettled(proxies.map((proxy) => proxy.close()));
  }
}

/** A library's id and label, and how to make it for a route. */
type Maker = Pick<Library, "id" | "label"> & { make: LibraryAt };

async function atRtt(proxy: DelayProxy, libraries: Maker[], plan: LatencyPlan, stats: Pick<RedisStats, "commands">): Promise<LatencyAtRtt> {
  const rows = cells(plan).flatMap((cell) => libraries.map((l): LatencyRow => ({ cell: cell.id, clients: cell.clients, id: l.id, label: l.label, rounds: [] })));
  const pings: RequestFloor[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    pings.push(await runRequestFloor((await proxy.route()).endpoint, { samples: plan.pingsPerRound, pauseMs: plan.pauseMs }));
    for (const cell of cells(plan)) {
      for (const library of shuffled(libraries)) {
        progress(`latency: RTT ${proxy.rttMs} ms, round ${round + 1} of ${plan.rounds}, ${cellLabel(cell.id, cell.clients)}, ${library.label}`);
        // No library starts with the garbage of the one before it.
        collectGarbage();
        const route = await proxy.route();
        const figures = await runLatencyCell(library.make(route.endpoint), {
          clients: cell.clients, rejoin: cell.rejoin, holdMs: plan.holdMs, warmHoldMs: plan.warmHoldMs + 2 * proxy.rttMs, cellMs: plan.cellMs,
          // A name per run: nothing an earlier run left on a name (an aborted waiter's place in line) is in this one's way.
          name: `latency:${proxy.rttMs}:${cell.id}:${library.id}:${round}`,
        }, route, stats);
        rows.find((r) => r.cell === cell.id && r.id === library.id)?.rounds.push(figures);
      }
    }
  }
  return { rttMs: proxy.rttMs, pings, rows };
}

export function cellLabel(cell: LatencyCellId, clients: number): string {
  if (cell === "2a") return `2a (${clients} clients, the releaser competes again at once)`;
  if (cell === "2b") return `2b = ${clients} contenders (the releaser rejoins after a handoff)`;
  return `${clients} contenders`;
}
