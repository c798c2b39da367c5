/**
 * Jepsen-style chaos: a few actors, each with lock sets and a fenced store on clients of its own,
 * run seeded random programs (acquire, tryAcquire, joins, resume, heartbeats, releases, withLock,
 * read-modify-writes and blind writes) on a few lock names, under leases short enough to lapse
 * mid-work, while the network loses requests and replies, sends requests twice and delays them,
 * some past timeoutMs. Some runs add a nemesis that deletes a lock's keys, some a store ttlMs.
 * Each run records a history and checks afterwards what a user relies on. It found a release()
 * retry answering "expired" (about once in 70 seeds), now pinned in retry-safety.test.ts.
 *
 * By default it runs the two seeds below. CHAOS_SEED=s CHAOS_SEEDS=n runs seeds s .. s+n-1 instead
 * (n defaults to 1); a seed fixes the plan, the programs and the network's dice, but the
 * interleaving still depends on timing, so a replay is close, not exact. A run with a violation
 * prints its history; CHAOS_TRACE=0 prints only the violations. Exploring: CHAOS_SEED=300
 * CHAOS_SEEDS=60 takes about 4.5 minutes.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fenceOrderViolations } from "../../support/chaos/check-fence-order.ts";
import { livenessViolations } from "../../support/chaos/check-liveness.ts";
import { mutualExclusionViolations } from "../../support/chaos/check-mutual-exclusion.ts";
import { finalStoreViolations } from "../../support/chaos/check-store-final.ts";
import { staleFenceViolations, storeOrderViolations } from "../../support/chaos/check-store-order.ts";
import { describePlan } from "../../support/chaos/plan.ts";
import { runChaos, type ChaosRun } from "../../support/chaos/run.ts";

const { CHAOS_SEED, CHAOS_SEEDS, CHAOS_TRACE } = process.env;
const seeds = CHAOS_SEED || CHAOS_SEEDS
  ? Array.from({ length: Number(CHAOS_SEEDS ?? 1) }, (_, i) => Number(CHAOS_SEED ?? 1) + i)
  // 397: a store ttlMs, many lost replies and duplicates; 351: the nemesis, many lost requests and
  // replies. Both with a short timeoutMs, and among the quicker seeds.
  : [397, 351];

describe("chaos: random programs under a misbehaving network", () => {
  const unhandledRejections: string[] = [];
  const noteUnhandled = (reason: unknown) => unhandledRejections.push(String(reason));
  beforeEach(() => void process.on("unhandledRejection", noteUnhandled));
  afterEach(() => void process.off("unhandledRejection", noteUnhandled));

  it.each(seeds)("seed %i keeps mutual exclusion, fence order, store safety and liveness", async (seed) => {
    const run = await runChaos(seed);
    const violations = [
      // Found as it ran: two owners at once, an early "expired" or LockLostError, a join or resume
      // changing the fence, a call unsettled within its bound or failing in an undocumented way.
      ...run.history.violations,
      ...mutualExclusionViolations(run.history),
      ...fenceOrderViolations(run.history),
      ...storeOrderViolations(run.history),
      ...staleFenceViolations(run.history, run.plan.storeTtlMs),
      ...await finalStoreViolations(run.history, run.plan),
      ...await livenessViolations(run.plan, run.lastCallAt),
    ];
    report(run, violations);
    expect(violations).toEqual([]);
    expect(unhandledRejections).toEqual([]);
  }, 120_000);
});

function report(run: ChaosRun, violations: string[]) {
  const { history, netStats } = run;
  console.log(`chaos ${describePlan(run.plan)}\n  ${run.calls} calls, ${history.leases.length} leases, ` +
    `${history.storeCalls.length} store calls, ${history.ms(run.lastCallAt)} ms, network ${JSON.stringify(netStats)}, ${violations.length} violations`);
  if (!violations.length) return;
  console.log(`VIOLATIONS seed ${run.plan.seed}:\n  ${violations.join("\n  ")}`);
  if (CHAOS_TRACE !== "0") console.log(history.trace.join("\n"));
}
