// Quorum bench, one client per library: acquire and release latency, taken in turns with a round
// trip to each node, so that the yardstick and the locks meet the same moments of the machine.
import { Redis } from "@upstash/redis";
import type { AcquireRecord, QuorumBenchLibrary } from "../adapters/quorum.ts";
import type { CommandCounts } from "../harness/commandstats.ts";
import type { NodesStats } from "../harness/quorum-nodes.ts";
import { callsTo } from "../harness/script-calls.ts";
import type { Endpoint } from "../harness/server.ts";
import { round, shuffled, summarize, type Summary } from "../harness/stats.ts";
import { now, progress, sleep } from "../harness/timing.ts";
import { asClient, closeClients, connectClients, oneCycle, warmUp, type Client } from "./clients.ts";

export interface QuorumSequentialPlan {
  /** Untimed cycles per library before the rounds. */
  warmMs: number;
  /** Each round lasts this × libraries; the libraries and the probes take turns within it. */
  msEach: number;
  rounds: number;
  /** A separate run of this many cycles per library, counted in INFO commandstats on every node. */
  countedCycles: number;
}

/** A lock's acquire() calls split by whether they needed a write-back round (adopt.lua). */
export interface Rounds {
  acquires: number;
  /** Acquires that returned with no adopt.lua sent: one round trip to the nodes per attempt. */
  oneRound: number;
  /** Acquires that wrote their fence back (adopt.lua) before returning. */
  writeBack: number;
  /** acquire.lua attempts per acquire() call (each attempt asks every node). */
  attemptsPerAcquire: number;
  /** adopt.lua requests per acquire sent before acquire() returned: the write-back round. */
  adoptBeforePerAcquire: number;
  /** adopt.lua requests per acquire sent after it returned, to nodes whose grant came after the vote. */
  adoptAfterPerAcquire: number;
}

export interface SequentialRow {
  id: string;
  cycles: number;
  seconds: number;
  /** Cycles ÷ the time spent in them. */
  opsPerSec: number;
  roundOpsPerSec: number[];
  acquireMs: Summary;
  releaseMs: Summary;
  /** Requests counted at the transport inside acquire() (HTTP requests, or TCP commands): what the caller waits on. */
  requestsPerAcquire: number;
  /** Every request the client sent over the rounds ÷ cycles: requests sent after acquire() returned included. */
  requestsPerCycle: number;
  /** fencelock only. */
  rounds: Rounds | null;
  /** acquire() latency of the one-round acquires, and of those that wrote back (fencelock only). */
  oneRoundAcquireMs: Summary | null;
  writeBackAcquireMs: Summary | null;
}

export interface RoundTrips {
  /** What was sent: a trivial script, through each node's own local server. */
  probe: string;
  /** Per node, one node at a time. */
  perNodeMs: Summary[];
  /** The majority-th lowest of the nodes' p50s: the slowest node a majority needs. */
  majorityNodeP50: number;
  /** The same script to all nodes at once, as an acquire sends: until a majority had answered. */
  fanOutMajorityMs: Summary;
  /** ... and until every node had. */
  fanOutAllMs: Summary;
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

const PROBE = "return 1";
const SETTLE_MS = 100;

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
    const probes = await probeClients(endpoints);
    const majority = Math.floor(endpoints.length / 2) + 1;
    for (const [i, clients] of groups.entries()) {
      await warmUp(clients);
      const end = now() + plan.warmMs;
      const client = clients[0]!;
      const entry = entries[i]!;
      while (now() < end) {
        const name = entry.name ? await entry.name() : "qs:warm";
        await asClient(client, () => oneCycle(client, name));
      }
    }
    for (let n = 0; n < 20; n++) await Promise.all(probes.map((p) => p()));
    await sleep(SETTLE_MS);
    for (const library of libraries) library.take();

    const samples = libraries.map(() => ({ acquire: [] as number[], release: [] as number[], requestsIn: 0, requests: 0, spent: 0, rounds: [] as number[] }));
    const requestsBefore = groups.map((clients) => clients[0]!.counter.requests);
    const perNode: number[][] = endpoints.map(() => []);
    const fanMajority: number[] = [];
    const fanAll: number[] = [];
    const turns = [...libraries.keys(), -1, -2];
    for (let r = 0; r < plan.rounds; r++) {
      progress(`quorum N = ${endpoints.length}: sequential round ${r + 1} of ${plan.rounds} (${libraries.length} libraries and the round-trip probes in turns)`);
      const spent = libraries.map(() => 0);
      const cycles = libraries.map(() => 0);
      const end = now() + plan.msEach * libraries.length;
      while (now() < end) {
        for (const turn of shuffled(turns)) {
          if (turn === -1) {
            // One node at a time, in a random order.
            for (const node of shuffled([...endpoints.keys()])) perNode[node]!.push(await timed(probes[node]!));
            continue;
          }
          if (turn === -2) {
            const start = now();
            const answered: number[] = [];
            await Promise.all(probes.map((p) => p().then(() => answered.push(now() - start))));
            answered.sort((a, b) => a - b);
            fanMajority.push(answered[majority - 1]!);
            fanAll.push(answered.at(-1)!);
            continue;
          }
          const client = groups[turn]![0]!;
          const s = samples[turn]!;
          const entry = entries[turn]!;
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
          spent[turn] = (spent[turn] ?? 0) + t2 - t0;
          cycles[turn] = (cycles[turn] ?? 0) + 1;
        }
      }
      libraries.forEach((_, i) => {
        samples[i]!.spent += spent[i] ?? 0;
        samples[i]!.rounds.push(round(((cycles[i] ?? 0) * 1000) / (spent[i] || 1), 1));
      });
    }
    // The requests a cycle set off after it returned (a quorum's slower nodes) land meanwhile.
    await sleep(SETTLE_MS);
    groups.forEach((clients, i) => (samples[i]!.requests = clients[0]!.counter.requests - requestsBefore[i]!));
    const rows = libraries.map((library, i) => sequentialRow(library, samples[i]!, library.take()));
    const p50s = perNode.map((ms) => summarize(ms).p50).sort((a, b) => a - b);
    const roundTrips: RoundTrips = {
      probe: `EVALSHA of \`${PROBE}\` (no keys) through the node's local server, by @upstash/redis`,
      perNodeMs: perNode.map(summarize),
      majorityNodeP50: p50s[majority - 1] ?? Number.NaN,
      fanOutMajorityMs: summarize(fanMajority),
      fanOutAllMs: summarize(fanAll),
    };
    const counted: CountedRow[] = [];
    for (const [i, entry] of entries.entries()) {
      if (!entry.uncounted) counted.push(await countCycles(entry.library, groups[i]![0]!, endpoints, plan.countedCycles, stats));
    }
    return { rows, roundTrips, counted };
  } finally {
    await Promise.all(groups.map(closeClients));
  }
}

async function timed(call: () => Promise<unknown>): Promise<number> {
  const start = now();
  await call();
  return now() - start;
}

/** One @upstash/redis client per node, configured as the lock clients are, with the probe script loaded. */
async function probeClients(endpoints: readonly Endpoint[]): Promise<Array<() => Promise<unknown>>> {
  return Promise.all(endpoints.map(async (e) => {
    const redis = new Redis({ url: e.url, token: e.token });
    const sha = await redis.scriptLoad(PROBE);
    return () => redis.evalsha(sha, [], []);
  }));
}

function sequentialRow(
  library: QuorumBenchLibrary,
  s: { acquire: number[]; release: number[]; requestsIn: number; requests: number; spent: number; rounds: number[] },
  records: AcquireRecord[],
): SequentialRow {
  const cycles = s.acquire.length;
  // Records come in the order of the acquires (one client, one at a time).
  const paired = library.fenced && records.length === cycles;
  const oneRound = paired ? s.acquire.filter((_, k) => records[k]!.adoptBefore === 0) : [];
  const writeBack = paired ? s.acquire.filter((_, k) => records[k]!.adoptBefore > 0) : [];
  return {
    id: library.id,
    cycles,
    seconds: round(s.spent / 1000),
    opsPerSec: round((cycles * 1000) / (s.spent || 1), 1),
    roundOpsPerSec: s.rounds,
    acquireMs: summarize(s.acquire),
    releaseMs: summarize(s.release),
    requestsPerAcquire: round(s.requestsIn / Math.max(1, cycles)),
    requestsPerCycle: round(s.requests / Math.max(1, cycles)),
    rounds: library.fenced ? roundsOf(records, library.nodes) : null,
    oneRoundAcquireMs: paired ? summarize(oneRound) : null,
    writeBackAcquireMs: paired ? summarize(writeBack) : null,
  };
}

export function roundsOf(records: readonly AcquireRecord[], nodes: number): Rounds {
  const acquires = Math.max(1, records.length);
  const adopts = records.reduce((sum, r) => sum + r.calls.count("adopt"), 0);
  const before = records.reduce((sum, r) => sum + r.adoptBefore, 0);
  return {
    acquires: records.length,
    oneRound: records.filter((r) => r.adoptBefore === 0).length,
    writeBack: records.filter((r) => r.adoptBefore > 0).length,
    attemptsPerAcquire: round(records.reduce((sum, r) => sum + r.acquireCalls, 0) / nodes / acquires),
    adoptBeforePerAcquire: round(before / acquires, 3),
    adoptAfterPerAcquire: round((adopts - before) / acquires, 3),
  };
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
