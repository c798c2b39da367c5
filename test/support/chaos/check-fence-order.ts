import type { History } from "./history.ts";

/**
 * Fences rise from one owner's lease to the next, in the order the leases were received. Where
 * keys were lost (which can leave two owners valid at once), at least for a call made after the
 * earlier lease was received.
 */
export function fenceOrderViolations(history: History): string[] {
  const violations: string[] = [];
  for (const name of new Set(history.leases.map((held) => held.name))) {
    const leases = history.leases.filter((held) => held.name === name).sort((x, y) => x.start - y.start);
    leases.forEach((x, i) => {
      for (const y of leases.slice(i + 1)) {
        if (x.owner === y.owner || y.fence > x.fence) continue;
        const keysLost = history.keysLostSinceCall(name, Math.min(x.callStart, y.callStart), y.start);
        if (!keysLost || x.start < y.callStart) {
          violations.push(`fence order on ${name}: L${x.id} f${x.fence} (received ${history.ms(x.start)}) then L${y.id} f${y.fence} ` +
            `of another owner (called ${history.ms(y.callStart)}, received ${history.ms(y.start)})`);
        }
      }
    });
  }
  return violations;
}
