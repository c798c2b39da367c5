import type { History } from "./history.ts";

/** The store never accepts a fence below one it accepted (or claimed) before the call was sent. */
export function storeOrderViolations(history: History): string[] {
  const accepted = history.storeCalls.filter((call) => call.outcome === "ok");
  const violations: string[] = [];
  for (const y of accepted) {
    for (const x of accepted) {
      if (x.resource === y.resource && x.repliedAt < y.sentAt && y.fence < x.fence) {
        violations.push(`store accepted ${y.kind} f${y.fence} (${y.tag ?? ""}) on ${y.resource} after ${x.kind} f${x.fence} (${x.tag ?? ""}) was accepted`);
      }
    }
  }
  return violations;
}

/** A StaleFenceError names a fence above the refused one, and one that was sent before the refusal came back. */
export function staleFenceViolations(history: History, storeTtlMs: number): string[] {
  const violations: string[] = [];
  for (const y of history.storeCalls.filter((call) => call.outcome === "stale")) {
    // With ttlMs, a record found expired refuses fences minted over ttlMs ago: its floor was never sent.
    const sent = storeTtlMs > 0 || history.storeCalls.some((x) => x.resource === y.resource && x.fence === y.highest && x.sentAt < y.repliedAt);
    if (!sent || y.highest! <= y.fence) violations.push(`stale ${y.kind} f${y.fence} on ${y.resource} names highest ${y.highest}, never sent before`);
  }
  return violations;
}
