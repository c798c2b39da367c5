/**
 * Model-based test of quorum mode: a few clients over three real nodes (each a redis-server under
 * the clock shim, behind a fixed address and a real local server) run random interleavings of
 * acquire, tryAcquire, reentrant joins, heartbeats, releases, resumes and leases left to lapse,
 * while a nemesis faults one node at a time: restarted empty, paused (SIGSTOP), or its clock
 * shifted seconds to an hour ahead or behind. In some runs clients' clocks run ahead too (their
 * proposed fences with them). Afterwards, over the recorded history:
 * - fence order: a lease that ended (released, or lapsed by its own remainingMs) before another
 *   owner's call has a lower fence, and no two owners ever share one; with every clock true, also
 *   by order of receipt. Where a client's clock ran ahead, only the first, and only where a majority
 *   of nodes was read to carry the earlier fence just after it arrived and kept it until the later
 *   lease (docs/guarantees.md#quorum-mode: beyond that, data lost on a majority may reorder fences);
 *   the pairs outside that are printed, not failed;
 * - mutual exclusion: no two owners' leases valid at once, waived around a restart or a node clock
 *   stepped forward (a node's clock decides validity, docs/quorum.md);
 * - as the calls ran: a join of a valid lease keeps its fence, a valid lease's heartbeat is not lost
 *   and its release does not say "expired" (waived likewise); calls settle within their bounds and
 *   fail only in documented ways;
 * - a fenced store never takes a stale write; no lock stays held after the last call (allowing for
 *   holds a node's clock stepped back kept longer).
 *
 * QUORUM_MODEL_SEED=s QUORUM_MODEL_SEEDS=n runs seeds s .. s+n-1 instead of the defaults; a seed
 * fixes the plan, programs and faults, not the interleaving. QUORUM_MODEL_STEPS=40-60 gives each
 * client that many steps (default 14-24). QUORUM_MODEL_TRACE=0 prints only the violations of a
 * failing run. Clock faults are skipped (with a message) without a C compiler. The minimal
 * scenarios of what the runs found (below) run unless seeds are given.
 *
 * Exploring on 25d19fc-aeace4c: seeds 1-160 (about 9 minutes) failed in 21, 32 and 138, a reentrant
 * join of a still valid lease getting a new fence; QUORUM_MODEL_SEED=1040 QUORUM_MODEL_SEEDS=60
 * QUORUM_MODEL_STEPS=40-70 (about 10 minutes) found that in 1050, 1093 and 1097, and a fence going
 * back in 1054 and 1074 (a join of an outlived hold, next to a node that forgot: a restart, or its
 * clock stepped 90 s ahead). Both are minimal scenarios below; a8e8b07 fixed both. The same long
 * run on 60ad485 failed only in seed 1060: a join on every node, one of which held the owner's lock
 * under another fence (a late grant nobody adopted), took that fence (third scenario below). With
 * a fix for that, seed 1076 once let a second owner in while a lease was valid, with pauses only:
 * releasing one of an owner's holds took the lock off a node where it counted only the other one
 * (fourth scenario below).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fenceOrderViolations } from "../../support/chaos/check-fence-order.ts";
import { livenessViolations } from "../../support/chaos/check-liveness.ts";
import { mutualExclusionViolations } from "../../support/chaos/check-mutual-exclusion.ts";
import { finalStoreViolations } from "../../support/chaos/check-store-final.ts";
import { staleFenceViolations, storeOrderViolations } from "../../support/chaos/check-store-order.ts";
import { clockShim, NO_COMPILER } from "../../support/faults/clock-shim.ts";
import { strictFenceViolations } from "../../support/quorum/chaos-checks.ts";
import { installClientClocks } from "../../support/quorum/chaos-client-clock.ts";
import { ModelNodes } from "../../support/quorum/model-nodes.ts";
import { describeModelPlan } from "../../support/quorum/model-plan.ts";
import { runModel, type ModelRun } from "../../support/quorum/model-run.ts";
import {
  fenceBackThroughStaleJoin, joinOfValidLeaseChangesFence, joinWhereOneNodeHoldsAnotherFence, releaseOfOneHoldDropsAnother,
} from "../../support/quorum/model-scenarios.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const { QUORUM_MODEL_SEED, QUORUM_MODEL_SEEDS, QUORUM_MODEL_STEPS, QUORUM_MODEL_TRACE } = process.env;
const exploring = Boolean(QUORUM_MODEL_SEED || QUORUM_MODEL_SEEDS);
// "40-60": longer programs, for exploring.
const steps = QUORUM_MODEL_STEPS?.split("-").map(Number) as [number, number] | undefined;
const seeds = exploring
  ? Array.from({ length: Number(QUORUM_MODEL_SEEDS ?? 1) }, (_, i) => Number(QUORUM_MODEL_SEED ?? 1) + i)
  : [3, 24];

describe("quorum model: random clients against three nodes failing one at a time", () => {
  let nodes: ModelNodes;
  beforeAll(async () => {
    const shim = await clockShim();
    if (!shim) console.log(`quorum model: clock faults ${NO_COMPILER}`);
    nodes = await ModelNodes.start(3, shim);
  });
  afterAll(async () => {
    await nodes?.close();
  });

  const unhandledRejections: string[] = [];
  const noteUnhandled = (reason: unknown) => unhandledRejections.push(String(reason));
  beforeEach(() => void process.on("unhandledRejection", noteUnhandled));
  afterEach(() => void process.off("unhandledRejection", noteUnhandled));

  it.each(seeds)("seed %i keeps fence order, mutual exclusion and the lease contract", async (seed) => {
    const run = await runModel(seed, nodes, steps);
    const fences = strictFenceViolations(run.history, run.premise, run.explain);
    const violations = [
      ...run.history.violations,
      ...fences.violations,
      // By receipt: with true clocks the proposal's time floor keeps it whatever the nodes lost; with
      // a clock ahead, losses on a majority of nodes may reorder it (docs/guarantees.md#quorum-mode).
      ...(run.skewed ? [] : fenceOrderViolations(run.history)),
      ...mutualExclusionViolations(run.history),
      ...storeOrderViolations(run.history),
      ...staleFenceViolations(run.history, 0),
      ...await finalStoreViolations(run.history, run.plan),
      ...await liveness(run),
    ];
    report(run, violations, fences.checkedPairs, fences.outside);
    expect(violations).toEqual([]);
    expect(unhandledRejections).toEqual([]);
  }, steps ? 600_000 : 120_000);
});

/**
 * No lock stays held after the last call. A node whose clock was set ahead and back keeps the holds
 * it took meanwhile that much longer (Redis expires keys by its clock): the bound grows by that,
 * and past 10 s the check is left out.
 */
async function liveness(run: ModelRun): Promise<string[]> {
  const steppedBackMs = Math.max(0, ...run.events.map((e) => e.offsetMs ?? 0));
  if (steppedBackMs > 10_000) {
    console.log(`seed ${run.plan.seed}: liveness not checked, a node's clock stepped back ${steppedBackMs} ms`);
    return [];
  }
  // livenessViolations allows for a request held back twice over longMs: the step back rides on that.
  const plan = { ...run.plan, faults: { ...run.plan.faults, longMs: Math.ceil(steppedBackMs / 2) } };
  return livenessViolations(plan, run.lastCallAt, run.observer);
}

function report(run: ModelRun, violations: string[], checkedPairs: number, outside: string[]) {
  const { history } = run;
  console.log(`${describeModelPlan(run.plan)}\n  ${run.calls} calls, ${history.leases.length} leases (${checkedPairs} ordered pairs), ` +
    `faults ${JSON.stringify(run.faults)}, ${history.ms(run.lastCallAt)} ms, ${violations.length} violations` +
    (outside.length ? `, ${outside.length} out of order where too few nodes kept the fence:\n  ${outside.join("\n  ")}` : ""));
  if (!violations.length) return;
  console.log(`VIOLATIONS seed ${run.plan.seed}:\n  ${violations.join("\n  ")}`);
  if (QUORUM_MODEL_TRACE !== "0") console.log(history.trace.join("\n"));
}

/**
 * What the runs found, as minimal scenarios (test/support/quorum/model-scenarios.ts): the first two
 * failed on 25d19fc-aeace4c and pass since a8e8b07; the third failed on 60ad485 and passes since
 * 7392a7a; the fourth fails on 38d9a6e. Left out while exploring seeds.
 */
describe.skipIf(exploring)("quorum model: found", () => {
  let nodes: ModelNodes;
  beforeAll(async () => {
    nodes = await ModelNodes.start(3, null);
  });
  afterAll(async () => {
    await nodes?.close();
  });

  it("a reentrant join on a node that kept an outlived hold still gets a fence above the last holder's", async () => {
    const restoreClocks = installClientClocks();
    try {
      const { x, joined } = await fenceBackThroughStaleJoin(nodes, uniquePrefix("qfound-back"));
      expect(joined).toBeGreaterThan(x);
    } finally {
      restoreClocks();
    }
  }, 60_000);

  it("a reentrant join of a valid lease keeps its fence, and the lease stays held", async () => {
    const { fence, joined, validMs, heartbeat } = await joinOfValidLeaseChangesFence(nodes, uniquePrefix("qfound-join"));
    expect(validMs).toBeGreaterThan(1_000);
    expect({ joined, heartbeat }).toEqual({ joined: fence, heartbeat: "ok" });
  }, 60_000);

  // Model seed 1060 found it.
  it("a reentrant join where one node holds the owner's lock with another fence keeps the lease's fence", async () => {
    const { fence, first, second, validMs, heartbeat } = await joinWhereOneNodeHoldsAnotherFence(nodes, uniquePrefix("qfound-other"));
    expect(validMs).toBeGreaterThan(1_000);
    expect({ first, second, heartbeat }).toEqual({ first: fence, second: fence, heartbeat: "ok" });
  }, 60_000);

  // Model seed 1076 found it; it failed on 38d9a6e (a node served afresh counted one hold).
  it("releasing one of an owner's two holds leaves the other held on a majority", async () => {
    const { x, joinedRemainingMs, sameFence } = await releaseOfOneHoldDropsAnother(nodes, uniquePrefix("qfound-release"));
    expect(sameFence).toBe(true);
    // J had time left when X asked (about 1.1 s): X must have been refused.
    if (joinedRemainingMs > 0) expect(x).toBeNull();
    else console.log("releaseOfOneHoldDropsAnother: J had lapsed before X asked; nothing checked");
  }, 60_000);
});
