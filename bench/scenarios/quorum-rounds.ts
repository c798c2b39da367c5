// How a fencelock client's acquires went in quorum mode: one round trip to the nodes, or a
// write-back round (adopt.lua) before acquire() returned; read from the scripts each one sent.
import type { AcquireRecord } from "../adapters/quorum-recorder.ts";
import { round } from "../harness/stats.ts";

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
