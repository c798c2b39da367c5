import type { Library, Transport } from "../adapters/types.ts";
import { commandDelta, totalCommands, type CommandCounts, type RedisStats } from "../harness/commandstats.ts";
import { allRequests } from "../harness/requests.ts";
import { round, shuffled } from "../harness/stats.ts";
import { collectGarbage, now, progress } from "../harness/timing.ts";
import { asClient, closeClients, connectClients, oneCycle, warmUp, withClients, type Client } from "./clients.ts";
import { measurePerCall, type PerCall } from "./per-call.ts";
import { countCommands, turnByTurn } from "./turns.ts";

export interface Throughput {
  clients: number;
  ops: number;
  seconds: number;
  opsPerSec: number;
  /** ops/s of each round, to show the spread. */
  roundOpsPerSec: number[];
  /** HTTP requests (or TCP commands) per acquire + release cycle, counted at the transport. */
  requestsPerOp: number;
  /** Redis commands per cycle from INFO commandstats, commands inside Lua included. */
  redisCommandsPerOp: number;
  commandsPerOp: CommandCounts;
  /** µs Redis spends executing one cycle's commands (INFO commandstats); sequential cell only, else NaN. */
  redisMicrosPerOp: number;
}

export interface UncontendedRow {
  id: string;
  label: string;
  transport: Transport;
  sequential: Throughput;
  concurrent: Throughput;
  perCall: PerCall;
}

export interface UncontendedPlan {
  /** Untimed cycles per library first, so every library runs with a warm JIT and open connections. */
  warmMs: number;
  /**
   * Measured time per library and cell, split into `rounds`. In a sequential round the libraries
   * take turns cycle by cycle (the round lasts this × libraries, shared by what each cycle takes);
   * concurrent rounds go library by library, in a new random order each round.
   */
  durationMs: number;
  rounds: number;
  concurrency: number;
  perCallSamples: number;
}

export async function runUncontended(libraries: Library[], plan: UncontendedPlan, stats: RedisStats): Promise<UncontendedRow[]> {
  progress(`uncontended: sequential, ${libraries.length} libraries × ${plan.rounds} interleaved rounds`);
  const sequential = await cell(libraries, 1, plan, stats);
  progress(`uncontended: ${plan.concurrency} clients on distinct names`);
  const concurrent = await cell(libraries, plan.concurrency, plan, stats);
  const rows: UncontendedRow[] = [];
  for (const [i, library] of libraries.entries()) {
    const perCall = await withClients(library, 1, ([client]) => measurePerCall(client, plan.perCallSamples));
    const { id, label, transport } = library;
    rows.push({ id, label, transport, sequential: sequential[i] ?? emptyThroughput(1), concurrent: concurrent[i] ?? emptyThroughput(0), perCall });
  }
  return rows;
}

export interface Tally {
  ops: number;
  ms: number;
  requests: number;
  commands: CommandCounts;
  redisMicros: number;
  rounds: number[];
}

/**
 * Untimed cycles after each forced GC: after one, every library ran at about a third of its pace
 * for 50-125 ms (the more JavaScript a cycle runs, the longer), a large part of a 250 ms round.
 */
const AFTER_GC_MS = 150;

/** Every library with `count` clients, rounds interleaved so drift and warm-up hit all alike. */
async function cell(libraries: Library[], count: number, plan: UncontendedPlan, stats: RedisStats): Promise<Throughput[]> {
  const groups: Client[][] = [];
  try {
    for (const library of libraries) groups.push(await connectClients(library, count));
    const tallies = groups.map((): Tally => ({ ops: 0, ms: 0, requests: 0, commands: {}, redisMicros: 0, rounds: [] }));
    for (const clients of groups) {
      await warmUp(clients);
      await cycleAll(clients, plan.warmMs);
    }
    for (let round = 0; round < plan.rounds; round++) {
      if (count === 1) {
        await turnByTurn(groups, plan.durationMs / plan.rounds, tallies);
        continue;
      }
      for (const i of shuffled([...groups.keys()])) {
        // Garbage one library left behind must not be collected on the next one's time.
        collectGarbage();
        await cycleAll(groups[i] ?? [], AFTER_GC_MS);
        await measureRound(groups[i] ?? [], plan.durationMs / plan.rounds, stats, tallies[i]);
      }
    }
    if (count === 1) await countCommands(groups, stats, tallies);
    return tallies.map((tally) => throughput(count, tally));
  } finally {
    await Promise.all(groups.map(closeClients));
  }
}



async function measureRound(clients: Client[], ms: number, stats: RedisStats, tally: Tally | undefined): Promise<void> {
  if (!tally) return;
  const requestsBefore = allRequests.requests;
  const commandsBefore = await stats.commands();
  const start = now();
  const ops = await cycleAll(clients, ms);
  const elapsed = now() - start;
  tally.ops += ops;
  tally.ms += elapsed;
  tally.rounds.push(round((ops * 1000) / elapsed, 1));
  tally.requests += allRequests.requests - requestsBefore;
  for (const [name, n] of Object.entries(commandDelta(commandsBefore, await stats.commands()))) {
    tally.commands[name] = (tally.commands[name] ?? 0) + n;
  }
}

function throughput(clients: number, tally: Tally): Throughput {
  const ops = Math.max(1, tally.ops);
  return {
    clients, ops: tally.ops, seconds: round(tally.ms / 1000),
    opsPerSec: round((tally.ops * 1000) / tally.ms, 1),
    roundOpsPerSec: tally.rounds,
    requestsPerOp: round(tally.requests / ops),
    redisCommandsPerOp: round(totalCommands(tally.commands) / ops),
    commandsPerOp: Object.fromEntries(Object.entries(tally.commands).map(([name, n]) => [name, round(n / ops)])),
    redisMicrosPerOp: tally.redisMicros > 0 ? round(tally.redisMicros / ops, 1) : Number.NaN,
  };
}

function emptyThroughput(clients: number): Throughput {
  return { clients, ops: 0, seconds: 0, opsPerSec: Number.NaN, roundOpsPerSec: [], requestsPerOp: Number.NaN, redisCommandsPerOp: Number.NaN, commandsPerOp: {}, redisMicrosPerOp: Number.NaN };
}

/** Each client: acquire + release on a name of its own, back to back, for `ms`. Returns the cycles done. */
async function cycleAll(clients: Client[], ms: number): Promise<number> {
  const end = now() + ms;
  const counts = await Promise.all(clients.map((client) => asClient(client, () => cycleUntil(client, end))));
  return counts.reduce((sum, n) => sum + n, 0);
}

async function cycleUntil(client: Client, end: number): Promise<number> {
  let ops = 0;
  const name = `uncontended:${client.index}`;
  while (now() < end) {
    await oneCycle(client, name);
    ops += 1;
  }
  return ops;
}
