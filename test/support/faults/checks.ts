import type { Held, History, StoreWrite } from "./history.ts";

/** Which earlier leases a check compares later ones against (a chain's step takes those of its own eras). */
export type Earlier = (held: Held) => boolean;
const every: Earlier = () => true;

export interface Found {
  count: number;
  examples: string[];
}

const MAX_EXAMPLES = 5;

function describe(history: History, held: Held): string {
  return `${held.client} f${held.fence} on ${held.era} (called ${history.ms(held.callStart)} ms, received ${history.ms(held.receivedAt)} ms)`;
}

function byName<T>(items: T[], nameOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(nameOf(item), [...(groups.get(nameOf(item)) ?? []), item]);
  return groups;
}

/**
 * Leases whose fence repeats or falls below one granted to another owner of the same name that
 * had been received before this lease's acquire was called: fencing is only as good as this.
 */
export function fenceRegressions(history: History, earlier: Earlier = every): Found {
  const found: Found = { count: 0, examples: [] };
  for (const leases of byName(history.leases, (held) => held.name).values()) {
    for (const y of leases) {
      const x = leases.find((x) => earlier(x) && x.owner !== y.owner && x.receivedAt < y.callStart && y.fence <= x.fence);
      if (!x) continue;
      found.count++;
      if (found.examples.length < MAX_EXAMPLES) found.examples.push(`${y.name}: ${describe(history, y)} after ${describe(history, x)}`);
    }
  }
  return found;
}

/**
 * Writes the store accepted from a holder older than one whose write it had already accepted (the
 * newer holder's acquire was called after the older one got its lease). The store refuses any
 * fence below the highest it saw, so this happens only when fences repeat or regress.
 */
export function staleWritesAccepted(history: History, earlier: Earlier = every): Found {
  const found: Found = { count: 0, examples: [] };
  const accepted = history.writes.filter((write) => write.outcome === "accepted");
  for (const writes of byName(accepted, (write) => write.resource).values()) {
    for (const stale of writes.filter((write) => earlier(write.held))) {
      const newer = writes.find((x: StoreWrite) => x.held.owner !== stale.held.owner &&
        x.held.callStart > stale.held.receivedAt && x.repliedAt < stale.sentAt);
      if (!newer) continue;
      found.count++;
      if (found.examples.length < MAX_EXAMPLES) {
        found.examples.push(`${stale.resource}: write of ${describe(history, stale.held)} accepted at ${history.ms(stale.repliedAt)} ms ` +
          `after that of newer ${describe(history, newer.held)} at ${history.ms(newer.repliedAt)} ms`);
      }
    }
  }
  return found;
}

/** Pairs of leases of different owners on one name whose local validity overlapped (information only). */
export function overlappingHolds(history: History, earlier: Earlier = every): number {
  let pairs = 0;
  for (const leases of byName(history.leases, (held) => held.name).values()) {
    leases.forEach((x, i) => {
      for (const y of leases.slice(i + 1)) {
        if (earlier(x) && x.owner !== y.owner && x.receivedAt < y.end && y.receivedAt < x.end) pairs++;
      }
    });
  }
  return pairs;
}

/**
 * Seconds from `faultAt` until acquires succeed again: until the first lease whose call started
 * after the fault and after the last acquire that failed (up to `until`) started; null when none
 * did. A call in flight when a server stops may fail or not, so only calls made since count.
 */
export function recoverySeconds(history: History, faultAt: number, until = Number.POSITIVE_INFINITY): number | null {
  const failed = history.failures.filter((failure) => failure.at >= faultAt && failure.at < until);
  const lastCall = Math.max(faultAt, ...failed.map((failure) => failure.callStart));
  const next = history.leases.filter((held) => held.callStart >= lastCall).map((held) => held.receivedAt);
  if (!next.length) return null;
  return (Math.min(...next) - faultAt) / 1000;
}

/** Error codes other than the documented unavailable ones: an acquire failing in an undocumented way. */
export function unexpectedFailures(history: History): string[] {
  const documented = new Set(["LOCK_UNAVAILABLE", "CLOCK_BEHIND"]);
  return [...new Set(history.failures.map((failure) => failure.code).filter((code) => !documented.has(code)))];
}
