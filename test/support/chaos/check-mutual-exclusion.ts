import type { History, ReceivedLease } from "./history.ts";

/**
 * Right now, during the run: no two owners both believe they hold one lock. Names whose keys the
 * nemesis ever deleted are skipped: there the fence, not the lease, keeps owners apart.
 */
export function sampleMutualExclusion(history: History, names: readonly string[], when: string): void {
  for (const name of names) {
    if (history.keysEverLost(name)) continue;
    const live = history.leases.filter((held) => held.name === name && !held.done && held.lease.remainingMs() > 0);
    if (new Set(live.map((held) => held.owner)).size > 1) {
      const holders = live.map((held) => `L${held.id}/a${held.actor}/f${held.fence}/${Math.round(held.lease.remainingMs())}ms`);
      history.violation(`mutual exclusion (${when}): ${name} held by ${holders.join(", ")}`);
    }
  }
}

/** Samples every 5 ms until the returned function is called, to catch overlaps between steps as well. */
export function sampleMutualExclusionEvery5ms(history: History, names: readonly string[]): () => void {
  const timer = setInterval(() => sampleMutualExclusion(history, names, "timer"), 5);
  return () => clearInterval(timer);
}

/**
 * Afterwards, by intervals: the local validity intervals of leases of different owners on one
 * name never overlap, unless keys of that name were lost from shortly before their calls on.
 */
export function mutualExclusionViolations(history: History): string[] {
  const violations: string[] = [];
  const interval = (held: ReceivedLease) => `a${held.actor} f${held.fence} ${history.ms(held.start)}..${history.ms(held.end)}`;
  for (const x of history.leases) {
    for (const y of history.leases) {
      const overlap = x.id < y.id && x.name === y.name && x.owner !== y.owner && x.start < y.end && y.start < x.end;
      if (overlap && !history.keysLostSinceCall(x.name, Math.min(x.callStart, y.callStart), Math.max(x.start, y.start))) {
        violations.push(`mutual exclusion: L${x.id} (${interval(x)}) and L${y.id} (${interval(y)}) on ${x.name}`);
      }
    }
  }
  return violations;
}
