// Which nodes carry a lease's fence, read straight from each node's redis-server just after the
// lease arrived, and whether enough of them kept it until a later lease: the premise of the
// quorum fence argument (docs/guarantees.md#quorum-mode), for runs where clients' clocks run ahead
// and the time floor no longer keeps fences in order on its own.
import { lockKeys } from "../lock-keys.ts";
import { majorityOf } from "../../../src/quorum/gather.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { ReceivedLease } from "../chaos/history.ts";
import type { NodeEvent } from "./model-nemesis.ts";
import type { ModelNodes } from "./model-nodes.ts";

/** A node whose last fence was at least the lease's when read, and how long its fence key had to live. */
interface Carrier {
  node: number;
  at: number;
  /** The node's clock offset then. */
  offsetMs: number;
  /** PTTL of the fence key: -1 none. */
  pttlMs: number;
}

export interface CarrierProbe {
  /** When every node had answered or been given up on: the premise only covers later calls. */
  doneAt: number;
  carriers: Carrier[];
}

// The write-back is awaited, the spread to busy and late nodes is not: give it a moment to land.
const SETTLE_MS = 30;
// A paused node does not answer: it carries nothing as far as the check knows.
const READ_WITHIN_MS = 150;

export async function probeCarriers(nodes: ModelNodes, prefix: string, held: ReceivedLease): Promise<CarrierProbe> {
  await sleep(SETTLE_MS);
  const { fence: key } = lockKeys(prefix, held.name);
  const reads = nodes.nodes.map(async ({ index, redis }): Promise<Carrier | undefined> => {
    const at = performance.now();
    const offsetMs = nodes.clockOffsetMs(index);
    const read = redis.admin.multi().hget(key, "last").pttl(key).exec().catch(() => null);
    const reply = await Promise.race([read, sleep(READ_WITHIN_MS).then(() => null)]);
    const last = Number(reply?.[0]?.[1] ?? 0);
    const pttlMs = Number(reply?.[1]?.[1] ?? -2);
    return last >= held.fence && pttlMs !== -2 ? { node: index, at, offsetMs, pttlMs } : undefined;
  });
  const carriers = (await Promise.all(reads)).filter((c) => c !== undefined);
  return { doneAt: performance.now(), carriers };
}

/**
 * Whether the fence argument covers lease `y` after lease `x`: x's fence was read on a majority of
 * nodes before y's call, and every one of them kept it (no restart, its fence key not expired by
 * its clock) until y arrived. Then y's majority meets one of them, which knows x's fence.
 */
export function carriersKept(probe: CarrierProbe | undefined, y: ReceivedLease, events: readonly NodeEvent[], nodes: number): boolean {
  if (!probe || probe.doneAt > y.callStart) return false;
  const kept = probe.carriers.filter((c) => keptUntil(c, y.start, events));
  return kept.length >= majorityOf(nodes);
}

/** A restart under way when the node was read (the read may have reached the old server) counts too. */
function restartBetween(node: number, from: number, to: number, events: readonly NodeEvent[]): NodeEvent | undefined {
  return events.find((e) => e.node === node && e.kind === "restart" && (e.until ?? Infinity) >= from && e.at <= to);
}

function keptUntil(c: Carrier, until: number, events: readonly NodeEvent[]): boolean {
  if (restartBetween(c.node, c.at, until, events)) return false;
  const mine = events.filter((e) => e.node === c.node && e.at >= c.at && e.at <= until);
  if (c.pttlMs === -1) return true;
  // The key expires once the node's clock reads past it; the clock may have run ahead meanwhile.
  const expiresAt = c.at + c.offsetMs + c.pttlMs;
  const maxOffset = Math.max(c.offsetMs, ...mine.map((e) => e.offsetMs ?? -Infinity));
  return until + maxOffset < expiresAt - 50;
}

/** For a report: which nodes were read to carry x's fence, and what became of each by y's arrival. */
export function describeCarriers(probe: CarrierProbe | undefined, y: ReceivedLease, events: readonly NodeEvent[], ms: (at: number) => number): string {
  if (!probe) return "carriers never read";
  if (probe.doneAt > y.callStart) return `carriers read at ${ms(probe.doneAt)}, after the later call`;
  const carriers = probe.carriers.map((c) => {
    const restart = restartBetween(c.node, c.at, y.start, events);
    const fate = restart ? `restarted at ${ms(restart.at)}` : keptUntil(c, y.start, events) ? "kept it" : "its fence key expired by its clock";
    return `n${c.node} (read at ${ms(c.at)}, ${fate})`;
  });
  return `carriers: ${carriers.join(", ") || "none read"}`;
}
