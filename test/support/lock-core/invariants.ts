// What the lock core property test checks: mutual exclusion while the programs run, fence order,
// write order and liveness once they have ended.
import { createLocks, type Lease } from "../../../src/index.ts";
import { until } from "../until.ts";
import { upstash } from "../upstash.ts";
import { MAX_LEASE_MS, NAMES } from "./program.ts";

/** A lease as a client received it (from acquire, tryAcquire, a join or a resume). */
export interface Received {
  at: number;
  owner: string;
  fence: number;
  name: string;
  how: string;
}

/** A fenced write accepted under a lease that stayed valid from send to reply. */
export interface Write {
  name: string;
  owner: string;
  fence: number;
  sentAt: number;
  repliedAt: number;
  accepted: boolean;
}

/** A lease a client holds, as the run tracks it. */
export interface Held {
  client: number;
  lease: Lease;
  name: string;
  /** Replaced by a resume in a new invocation: the old object is no longer used. */
  superseded: boolean;
}

/** Right now: no lock valid for two owners, and no owner valid with two fences. */
export function mutualExclusionViolations(held: Held[], when: string): string[] {
  const violations: string[] = [];
  for (const name of NAMES) {
    const live = held.filter((h) => h.name === name && !h.superseded && h.lease.remainingMs() > 0);
    const owners = new Set(live.map((h) => h.lease.owner));
    if (owners.size > 1) {
      violations.push(`mutual exclusion (${when}): ${name} valid for ${owners.size} owners, fences ${live.map((h) => `${h.lease.fence}/c${h.client}/${Math.round(h.lease.remainingMs())}ms`).join(", ")}`);
    }
    const fences = new Map<string, number>();
    for (const h of live) {
      const f = fences.get(h.lease.owner);
      if (f !== undefined && f !== h.lease.fence) violations.push(`${name}: one owner valid with two fences ${f} and ${h.lease.fence}`);
      fences.set(h.lease.owner, h.lease.fence);
    }
  }
  return violations;
}

/** Fences across owners rise in the order the leases were received, never repeating across owners. */
export function fenceOrderViolations(received: Received[]): string[] {
  const violations: string[] = [];
  for (const name of NAMES) {
    const list = received.filter((r) => r.name === name).sort((x, y) => x.at - y.at);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const [x, y] = [list[i]!, list[j]!];
        if (x.owner === y.owner) continue;
        if (y.fence <= x.fence) violations.push(`fence order: ${name} ${x.how} fence ${x.fence} then ${y.how} of another owner fence ${y.fence}`);
      }
    }
  }
  return violations;
}

/** Writes made within their leases are ordered by fence in real time. */
export function writeOrderViolations(writes: Write[]): string[] {
  const violations: string[] = [];
  for (const name of NAMES) {
    const list = writes.filter((w) => w.name === name);
    for (const x of list) {
      for (const y of list) {
        if (x.owner !== y.owner && x.repliedAt < y.sentAt && y.fence < x.fence) {
          violations.push(`write order: ${name} fence ${x.fence} written before fence ${y.fence} of another owner`);
        }
      }
    }
  }
  return violations;
}

/** Liveness: every lease lapses or is released, then the lock is free with nobody in line. */
export async function livenessViolations(prefix: string): Promise<string[]> {
  const violations: string[] = [];
  const observer = createLocks({ redis: upstash(), prefix, timeoutMs: 2_000 });
  for (const name of NAMES) {
    try {
      await until(async () => {
        const state = await observer.inspect(name);
        return !state.held && state.waiters === 0;
      }, MAX_LEASE_MS + 2_500 + 300);
      const fresh = await observer.tryAcquire(name, { leaseMs: 2_000 });
      if (!fresh) violations.push(`liveness: tryAcquire on free ${name} failed; now ${JSON.stringify(await observer.inspect(name))}`);
      else await fresh.release();
    } catch {
      violations.push(`liveness: ${name} still ${JSON.stringify(await observer.inspect(name))}`);
    }
  }
  return violations;
}
