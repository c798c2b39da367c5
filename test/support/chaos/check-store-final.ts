import { createFencedStore, type Fenced } from "../../../src/index.ts";
import { upstash } from "../upstash.ts";
import type { History, StoreCall } from "./history.ts";
import type { ChaosPlan } from "./plan.ts";
import type { StoredValue } from "./store-steps.ts";

/**
 * Afterwards, each resource as stored: a write reported accepted is stored or superseded by a
 * higher fence, and no increment of a claimed read-modify-write counter is lost.
 */
export async function finalStoreViolations(history: History, plan: ChaosPlan): Promise<string[]> {
  const { prefix, storeTtlMs } = plan;
  const reader = createFencedStore({ redis: upstash(), prefix, timeoutMs: 5_000, ...(storeTtlMs && { ttlMs: storeTtlMs }) });
  const violations: string[] = [];
  for (const resource of new Set(history.storeCalls.map((call) => call.resource))) {
    const final = await reader.read<StoredValue>(resource);
    // Idle long enough to expire: nothing left to compare.
    if (storeTtlMs && (!final || history.restartedCounters.has(resource))) continue;
    const calls = history.storeCalls.filter((call) => call.resource === resource);
    violations.push(...finalValueViolations(resource, calls, final));
  }
  return violations;
}

function finalValueViolations(resource: string, calls: StoreCall[], final: Fenced<StoredValue> | null): string[] {
  const violations: string[] = [];
  const maxFence = Math.max(0, ...calls.filter((call) => call.outcome === "ok").map((call) => call.fence));
  if (maxFence && (!final || final.fence < maxFence)) violations.push(`${resource}: final fence ${final?.fence} below accepted ${maxFence}`);
  const writes = calls.filter((call) => call.kind === "write");
  if (!final) {
    if (writes.some((call) => call.outcome === "ok")) violations.push(`${resource}: accepted writes but nothing stored`);
    return violations;
  }
  const source = writes.find((call) => call.tag === final.value.tag);
  if (!source) return [...violations, `${resource}: stored value ${JSON.stringify(final.value)} from no write`];
  violations.push(...lostWriteViolations(resource, writes, source));
  if (resource.startsWith("counter:")) violations.push(...lostUpdateViolations(resource, writes, final.value.n));
  return violations;
}

/** The stored value's write was not reported stale, and no accepted write was lost to it. */
function lostWriteViolations(resource: string, writes: StoreCall[], source: StoreCall): string[] {
  const violations: string[] = [];
  if (source.outcome === "stale") violations.push(`${resource}: stored value ${source.tag} was reported stale`);
  for (const x of writes) {
    if (x.outcome !== "ok" || x === source) continue;
    if (x.fence > source.fence) violations.push(`${resource}: accepted write ${x.tag} f${x.fence} lost to ${source.tag} f${source.fence}`);
    if (x.fence === source.fence && source.outcome === "ok" && source.repliedAt < x.sentAt) {
      violations.push(`${resource}: accepted write ${x.tag} overwritten by earlier ${source.tag} of the same fence`);
    }
  }
  return violations;
}

/** Each accepted count is new (a repeat is an increment lost), and none is above the stored count. */
function lostUpdateViolations(resource: string, writes: StoreCall[], finalN: number | undefined): string[] {
  const violations: string[] = [];
  const counts = writes.filter((call) => call.outcome === "ok").map((call) => call.n!);
  const repeated = counts.filter((n, i) => counts.indexOf(n) !== i);
  if (repeated.length) violations.push(`${resource}: lost update, value(s) ${[...new Set(repeated)].join(", ")} accepted twice`);
  if (counts.length && (finalN ?? 0) < Math.max(...counts)) violations.push(`${resource}: final n ${finalN} below accepted ${Math.max(...counts)}`);
  return violations;
}
