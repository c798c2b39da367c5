// Quorum bench, one client per library: acquire and release latency, taken in turns with a round
// trip to each node, so that the yardstick and the locks meet the same moments of the machine.
import type { QuorumBenchLibrary } from "../adapters/quorum.ts";
import type { CommandCounts } from "../harness/commandstats.ts";
import type { NodesStats } from "../harness/quorum-nodes.ts";
import { callsTo } from "../harness/script-calls.ts";
import type { Endpoint } from "../harness/server.ts";
import { round, shuffled } from "../harness/stats.ts";
import { now, progress, sleep } from "../harness/timing.ts";
import { asClient, closeClients, connectClients, oneCycle, warmUp, type Client } from "./clients.ts";
import { RoundTripProbes, type RoundTrips } from "./quorum-round-trips.ts";
import { emptySamples, sequentialRow, type CycleSamples, type SequentialRow } from "./quorum-sequential-row.ts";

export interface QuorumSequentialPlan {
  /** Untimed cycles per library before the rounds. */
  warmMs: number;
  /** Each round lasts this × libraries; the libraries and the probes take turns within it. */
  msEach: number;
  rounds: number;
  /** A separate run of this many cycles per library, counted in INFO commandstats on every node. */
  countedCycles: number;
}

/** Per node, in node order: what one cycle made it run (commandstats) and which scripts it was sent (transport). */
export interface CountedRow {
  id: string;
  cycles: number;
  /** Every command each node ran per cycle, scripts' inner commands included. */
  redisCommandsPerCycle: number[];
  /** EVALSHA (and EVAL) calls each node ran per cycle. */
  scriptRunsPerCycle: number[];
  /** fencelock: script requests per cycle by script name, per node, counted at the transport. */
  scriptsPerCycle: Array<Record<string, number>> | null;
}

const SETTLE_MS = 100;
/** The probes' turns among the libraries' (whose turns are their indexes). */
const EACH_NODE_ALONE = -1;
const ALL_NODES_AT_ONCE = -2;

/**
 * A library in the sequential rounds. `name` gives the lock name of its next cycle (and may prepare
 * it untimed: the forced write-back row seeds a fence there); by default one name, "qs:cycle".
 */
export interface SequentialEntry {
  library: QuorumBenchLibrary;
  name?: () => Promise<string>;
  /** Left out of the counted commandstats run. */
  uncounted?: boolean;
}

export async function runQuorumSequential(
  entries: SequentialEntry[],
  endpoints: readonly Endpoint[],
  plan: QuorumSequentialPlan,
  stats: NodesStats,
): Promise<{ rows: SequentialRow[]; roundTrips: RoundTrips; counted: CountedRow[] }> {
  const libraries = entries.map((e) => e.library);
  const groups: Client[][] = [];
  try {
    for (const library of libraries) groups.push(await connectClients(library, 1));
    const probes = await RoundTripProbes.connect(endpoints);
    const clients = groups.map((group) => group[0]!);
    await warmUpEntries(entries, groups, plan.warmMs);
    await probes.warm(20);
    await sleep(SETTLE_MS);
    for (const library of libraries) library.take();

    const samples = await timedRounds(entries, clients, probes, plan, endpoints.length);
    const rows = libraries.map((library, i) => sequentialRow(library, samples[i]!, library.take()));
    const roundTrips = probes.summary();
    const counted: CountedRow[] = [];
    for (const [i, entry] of entries.entries()) {
      if (!entry.uncounted) counted.push(await countCycles(entry.library, clients[i]!, endpoints, plan.countedCycles, stats));
    }
    return { rows, roundTrips, counted };
  } finally {
    await Promise.all(groups.map(closeClients));
  }
}

/** Each library's clients warmed up, then untimed cycles of its own for `warmMs`. */
async function warmUpEntries(entries: readonly SequentialEntry[], groups: readonly Client[][], warmMs: number): Promise<void> {
  for (const [i, clients] of groups.entries()) {
    await warmUp(clients);
    const end = now() + warmMs;
    const client = clients[0]!;
    const entry = entries[i]!;
    while (now() < end) {
      const name = entry.name ? await entry.name() : "qs:warm";
      await asClient(client, () => oneCycle(client, name));
    }
  }
}

/** The timed rounds: each library's client and the probes in turns, in a random order. */
async function timedRounds(
  entries: readonly SequentialEntry[],
  clients: readonly Client[],
  probes: RoundTripProbes,
  plan: QuorumSequentialPlan,
  nodes: number,
): Promise<CycleSamples[]> {
  const samples = clients.map(emptySamples);
  const requestsBefore = clients.map((client) => client.counter.requests);
  const turns = [...clients.keys(), EACH_NODE_ALONE, ALL_NODES_AT_ONCE];
  for (let r = 0; r < plan.rounds; r++) {
    progress(`quorum N = ${nodes}: sequential round ${r + 1} of ${plan.rounds} (${clients.length} libraries and the round-trip probes in turns)`);
    const spent = clients.map(() => 0);
    const cycles = clients.map(() => 0);
    const end = now() + plan.msEach * clients.length;
    while (now() < end) {
      for (const turn of shuffled(turns)) {
        if (turn === EACH_NODE_ALONE) await probes.eachNodeAlone();
        else if (turn === ALL_NODES_AT_ONCE) await probes.allNodesAtOnce();
        else {
          const cycle = await timedCycle(clients[turn]!, entries[turn]!, samples[turn]!);
          spent[turn] = (spent[turn] ?? 0) + cycle.end - cycle.start;
          cycles[turn] = (cycles[turn] ?? 0) + 1;
        }
      }
    }
    samples.forEach((s, i) => {
      s.spent += spent[i] ?? 0;
      s.rounds.push(round(((cycles[i] ?? 0) * 1000) / (spent[i] || 1), 1));
    });
  }
  // The requests a cycle set off after it returned (a quorum's slower nodes) land meanwhile.
  await sleep(SETTLE_MS);
  clients.forEach((client, i) => (samples[i]!.requests = client.counter.requests - requestsBefore[i]!));
  return samples;
}

/** One acquire + release, its times and the requests inside acquire() added to `s`; returns when it started and ended. */
async function timedCycle(client: Client, entry: SequentialEntry, s: CycleSamples): Promise<{ start: number; end: number }> {
  const name = entry.name ? await entry.name() : "qs:cycle";
  const before = client.counter.requests;
  const t0 = now();
  const handle = await asClient(client, () => client.adapter.acquire(name));
  const t1 = now();
  const middle = client.counter.requests;
  await asClient(client, () => client.adapter.release(handle));
  const t2 = now();
  s.acquire.push(t1 - t0);
  s.release.push(t2 - t1);
  s.requestsIn += middle - before;
  return { start: t0, end: t2 };
}

/** `cycles` cycles, one client, with every node's INFO commandstats and the transport's script counts read around them. */
async function countCycles(library: QuorumBenchLibrary, client: Client, endpoints: readonly Endpoint[], cycles: number, stats: NodesStats): Promise<CountedRow> {
  const scriptsBefore = endpoints.map((e) => ({ ...callsTo(e.url).byScript }));
  const ran = await stats.during(async () => {
    for (let n = 0; n < cycles; n++) await asClient(client, () => oneCycle(client, "qs:counted"));
    // A quorum's release returns at a majority: the slower nodes' requests of the last cycle land meanwhile.
    await sleep(SETTLE_MS);
  });
  const perCycle = (counts: CommandCounts) => round(Object.values(counts).reduce((sum, n) => sum + n, 0) / cycles);
  const scripts = library.transport === "http"
    ? endpoints.map((e, i) => Object.fromEntries(Object.entries(callsTo(e.url).byScript)
      .map(([name, n]) => [name, round((n - (scriptsBefore[i]?.[name] ?? 0)) / cycles)])
      .filter(([, n]) => (n as number) > 0)))
    : null;
  library.take();
  return {
    id: library.id,
    cycles,
    redisCommandsPerCycle: ran.map(perCycle),
    scriptRunsPerCycle: ran.map((c) => round(((c.evalsha ?? 0) + (c.eval ?? 0)) / cycles)),
    scriptsPerCycle: scripts,
  };
}
