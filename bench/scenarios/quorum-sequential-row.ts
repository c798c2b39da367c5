// One library's row of the quorum bench's sequential rounds: its timed cycles summed up, and its
// acquires split by whether they took one round or wrote back (fencelock).
import type { QuorumBenchLibrary } from "../adapters/quorum.ts";
import type { AcquireRecord } from "../adapters/quorum-recorder.ts";
import { round, summarize, type Summary } from "../harness/stats.ts";
import { roundsOf, type Rounds } from "./quorum-rounds.ts";

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

/** What one library's timed cycles recorded over the rounds. */
export interface CycleSamples {
  acquire: number[];
  release: number[];
  /** Requests sent inside acquire(). */
  requestsIn: number;
  /** Every request the client sent over the rounds. */
  requests: number;
  /** Milliseconds spent in the cycles. */
  spent: number;
  /** Cycles per second in each round. */
  rounds: number[];
}

export function emptySamples(): CycleSamples {
  return { acquire: [], release: [], requestsIn: 0, requests: 0, spent: 0, rounds: [] };
}

export function sequentialRow(library: QuorumBenchLibrary, s: CycleSamples, records: AcquireRecord[]): SequentialRow {
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
