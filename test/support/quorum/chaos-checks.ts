// Fence checks for quorum mode, over a chaos History: stricter than check-fence-order.ts, whose
// waiver for lost keys fits one Redis; in quorum mode losing a minority's data must not matter.
import type { History, ReceivedLease } from "../chaos/history.ts";

/**
 * Whether the argument for fence order covers lease `y` after lease `x` (the nodes that carried
 * x's fence kept their data in between); by default always.
 */
export type Premise = (x: ReceivedLease, y: ReceivedLease) => boolean;

export interface FenceCheck {
  violations: string[];
  /** Pairs that break the order where `premise` says the argument does not cover them. */
  outside: string[];
  /** Pairs of different owners where one ended before the other's call: what the order was checked on. */
  checkedPairs: number;
}

/**
 * For every two leases of different owners on one name: when x ended (released, or lapsed by its
 * own remainingMs) before y's call was made, y's fence is higher; and no two ever share a fence.
 * No waiver for lost keys: only `premise`, which a run with clients' clocks far ahead needs.
 */
export function strictFenceViolations(
  history: History,
  premise: Premise = () => true,
  /** Appended to a pair found outside the premise. */
  explain: (x: ReceivedLease, y: ReceivedLease) => string = () => "",
): FenceCheck {
  const check: FenceCheck = { violations: [], outside: [], checkedPairs: 0 };
  for (const name of new Set(history.leases.map((held) => held.name))) {
    const leases = history.leases.filter((held) => held.name === name);
    for (const x of leases) {
      for (const y of leases) {
        if (x === y || x.owner === y.owner) continue;
        const line = (what: string) => `${what} on ${name}: L${x.id} (a${x.actor} f${x.fence}, called ${history.ms(x.callStart)}, ` +
          `received ${history.ms(x.start)}, ended ${history.ms(x.end)}) and L${y.id} (a${y.actor} f${y.fence}, called ${history.ms(y.callStart)}, received ${history.ms(y.start)})`;
        const sort = (what: string, [a, b]: readonly [ReceivedLease, ReceivedLease]) => {
          const explained = `${line(what)}${explain(a, b) ? `: ${explain(a, b)}` : ""}`;
          (premise(a, b) ? check.violations : check.outside).push(explained);
        };
        if (x.id < y.id && x.fence === y.fence) sort("one fence for two owners", x.start <= y.start ? [x, y] : [y, x]);
        if (x.end > y.callStart) continue;
        check.checkedPairs++;
        if (y.fence <= x.fence) sort("fence went back", [x, y]);
      }
    }
  }
  return check;
}
