import { createLocks, type Locks } from "../../../src/index.ts";
import { QUEUE_ALIVE_MS } from "../../../src/waiting/backoff.ts";
import { until } from "../until.ts";
import { upstash } from "../upstash.ts";
import { MAX_LEASE_MS, type ChaosPlan } from "./plan.ts";

/**
 * How long after the last call every lock must be free: a late request lands within timeoutMs
 * and the network's delays (allowed twice over), then holds a lease at most, and a waiter's
 * place in line lapses after QUEUE_ALIVE_MS; 500 ms to spare.
 */
function settleMs({ timeoutMs, faults }: ChaosPlan): number {
  return MAX_LEASE_MS + 2 * (timeoutMs + faults.longMs + 2 * faults.maxDelayMs) + QUEUE_ALIVE_MS + 500;
}

/**
 * Afterwards no hold leaks: within settleMs of the last call each lock is free (on every node, in
 * quorum mode) with nobody in line, and can then be taken at once (the run let the requests the
 * network held back land first).
 */
export async function livenessViolations(
  plan: ChaosPlan,
  lastCallAt: number,
  // Quorum chaos passes a lock set over its nodes.
  observer: Locks = createLocks({ redis: upstash(), prefix: plan.prefix, timeoutMs: 5_000 }),
): Promise<string[]> {
  const withinMs = settleMs(plan);
  const violations: string[] = [];
  for (const name of plan.names) {
    try {
      // At least one look, however long the checks before took.
      await until(async () => {
        const state = await observer.inspect(name);
        // In quorum mode every node's own view too: holds of two owners on two nodes leave no majority to take.
        return !state.held && state.holds === 0 && state.waiters === 0 && (state.nodes ?? []).every((node) => !node?.held);
      }, Math.max(1, lastCallAt + withinMs - performance.now()));
      const fresh = await observer.tryAcquire(name, { leaseMs: 2_000 });
      if (!fresh) violations.push(`liveness: tryAcquire of free ${name} failed: ${JSON.stringify(await observer.inspect(name))}`);
      else await fresh.release();
    } catch {
      violations.push(`liveness: ${name} still ${JSON.stringify(await observer.inspect(name))} ${withinMs} ms after the last call`);
    }
  }
  return violations;
}
