// Quorum bench, many clients on distinct names: throughput, acquire latency and requests per cycle.
import type { QuorumBenchLibrary } from "../adapters/quorum.ts";
import { allRequests } from "../harness/requests.ts";
import { round, shuffled, summarize, type Summary } from "../harness/stats.ts";
import { collectGarbage, now, progress } from "../harness/timing.ts";
import { asClient, closeClients, connectClients, warmUp, type Client } from "./clients.ts";
import { roundsOf, type Rounds } from "./quorum-rounds.ts";

export interface QuorumConcurrentPlan {
  clients: number;
  warmMs: number;
  /** Per library in all, split over the rounds; each round runs the libraries one after another in a random order. */
  durationMs: number;
  rounds: number;
}

export interface ConcurrentRow {
  id: string;
  clients: number;
  cycles: number;
  seconds: number;
  opsPerSec: number;
  roundOpsPerSec: number[];
  acquireMs: Summary;
  /** Requests counted at the transport per acquire + release cycle. */
  requestsPerCycle: number;
  rounds: Rounds | null;
}

export async function runQuorumConcurrent(libraries: QuorumBenchLibrary[], plan: QuorumConcurrentPlan, nodes: number): Promise<ConcurrentRow[]> {
  const groups: Client[][] = [];
  try {
    for (const library of libraries) groups.push(await connectClients(library, plan.clients));
    for (const [i, clients] of groups.entries()) {
      await warmUp(clients);
      await cycleAll(clients, plan.warmMs, []);
      libraries[i]!.take();
    }
    const tallies = libraries.map(() => ({ cycles: 0, ms: 0, requests: 0, rounds: [] as number[], acquire: [] as number[] }));
    for (let r = 0; r < plan.rounds; r++) {
      progress(`quorum N = ${nodes}: ${plan.clients} clients on distinct names, round ${r + 1} of ${plan.rounds}`);
      for (const i of shuffled([...libraries.keys()])) {
        collectGarbage();
        const tally = tallies[i]!;
        const requestsBefore = allRequests.requests;
        const start = now();
        const cycles = await cycleAll(groups[i]!, plan.durationMs / plan.rounds, tally.acquire);
        const elapsed = now() - start;
        tally.cycles += cycles;
        tally.ms += elapsed;
        tally.requests += allRequests.requests - requestsBefore;
        tally.rounds.push(round((cycles * 1000) / elapsed, 1));
      }
    }
    return libraries.map((library, i) => {
      const t = tallies[i]!;
      const records = library.take();
      return {
        id: library.id, clients: plan.clients, cycles: t.cycles, seconds: round(t.ms / 1000),
        opsPerSec: round((t.cycles * 1000) / (t.ms || 1), 1), roundOpsPerSec: t.rounds,
        acquireMs: summarize(t.acquire),
        requestsPerCycle: round(t.requests / Math.max(1, t.cycles)),
        rounds: library.fenced ? roundsOf(records, library.nodes) : null,
      };
    });
  } finally {
    await Promise.all(groups.map(closeClients));
  }
}

/** Each client: acquire + release on a name of its own, back to back, for `ms`; acquire times go to `acquireMs`. */
async function cycleAll(clients: Client[], ms: number, acquireMs: number[]): Promise<number> {
  const end = now() + ms;
  const counts = await Promise.all(clients.map((client) => asClient(client, async () => {
    let cycles = 0;
    const name = `qc:${client.index}`;
    while (now() < end) {
      const start = now();
      const handle = await client.adapter.acquire(name);
      acquireMs.push(now() - start);
      await client.adapter.release(handle);
      cycles += 1;
    }
    return cycles;
  })));
  return counts.reduce((sum, n) => sum + n, 0);
}
