import { sleep } from "../../../src/waiting/backoff.ts";
import { failOverLosingWrites, waitInSync } from "./failover.ts";
import type { Form } from "./forms.ts";
import { Rig } from "./rig.ts";
import { measure, type Row } from "./row.ts";

/** Lost holders' leaseMs: still valid locally when they write, long after their keys were lost. */
export const LOST_HOLDER_LEASE_MS = 20_000;

/** Opens a rig, runs `scenario` on it and always tears it down. */
export async function withRig(form: Form, scenario: (rig: Rig) => Promise<Row[]>): Promise<Row[]> {
  const rig = await Rig.open(form);
  try {
    return await scenario(rig);
  } finally {
    await rig.close();
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const failedBetween = (rig: Rig, from: number, to: number) =>
  rig.history.failures.filter((failure) => failure.at >= from && failure.at < to).length;

/** SIGKILL the primary after cutting its replica's link, promote the replica: the last writes are lost. */
export function failoverLostWrites(form: Form): Promise<Row[]> {
  return withRig(form, async (rig) => {
    const primary = await rig.redis("P");
    const replica = await rig.redis("R", { replicaOf: primary });
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const plan = { from: primary, to: replica, endpoint, gapMs: form.gapMs, stragglerLeaseMs: LOST_HOLDER_LEASE_MS };
    const { killedAt, lostHolders } = await failOverLosingWrites(rig, plan);
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    return [measure(rig.history, {
      scenario: "failover, last writes lost; lost holders write late", inside: true, faultAt: killedAt,
      condition: `gap ≥ ${seconds(form.gapMs)} > lag 0 + τ 1 s`, notes: lostHolders,
    })];
  });
}

/** SIGSTOP the primary for longer than the lease, then SIGCONT: its keys expire meanwhile. */
export function sigstop(form: Form): Promise<Row[]> {
  return withRig(form, async (rig) => {
    const primary = await rig.redis("P");
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    // Holders paused with the server: they write after it resumes, once a newer holder has.
    const paused = await rig.workload.straggle(endpoint, rig.stragglerNames(), form.leaseMs, form.stragglerBoundMs);
    const stopMs = form.leaseMs + 1_500;
    const stoppedAt = rig.history.note("SIGSTOP P");
    primary.signal("SIGSTOP");
    await sleep(stopMs);
    primary.signal("SIGCONT");
    rig.history.note("SIGCONT P");
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    return [measure(rig.history, {
      scenario: `SIGSTOP primary ${seconds(stopMs)} (lease ${seconds(form.leaseMs)})`, inside: true, faultAt: stoppedAt,
      condition: "no fence lost", notes: `${paused.length} holders paused with it`,
    })];
  });
}

/** SIGKILL the only server and start an empty one on its port after the gap: every key is lost. */
export function restartEmpty(form: Form): Promise<Row[]> {
  return withRig(form, async (rig) => {
    const primary = await rig.redis("P");
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const lost = await rig.workload.straggle(endpoint, rig.stragglerNames(), LOST_HOLDER_LEASE_MS, form.gapMs + form.stragglerBoundMs);
    endpoint.proxy.switchTo(null);
    const killedAt = rig.history.note("SIGKILL P");
    await primary.kill();
    await sleep(form.gapMs - (performance.now() - killedAt));
    endpoint.proxy.switchTo(await rig.redis("P'", { port: primary.port }));
    rig.history.note("restarted P empty");
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    return [measure(rig.history, {
      scenario: "restart without persistence", inside: true, faultAt: killedAt,
      condition: `gap ≥ ${seconds(form.gapMs)} > lag 0 + τ 1 s`, notes: `${lost.length} lost holders`,
    })];
  });
}

/** FLUSHALL under load: keys lost with no gap at all, on one clock. */
export function flushall(form: Form): Promise<Row[]> {
  return withRig(form, async (rig) => {
    const primary = await rig.redis("P");
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const lost = await rig.workload.straggle(endpoint, rig.stragglerNames(), LOST_HOLDER_LEASE_MS, form.stragglerBoundMs);
    const flushedAt = rig.history.note("FLUSHALL");
    await primary.admin.flushall();
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    // Outside by the letter (the gap can be 0), but with one steady clock no fence is ever ahead of
    // the clock that mints the next one, so both counts are still asserted.
    return [measure(rig.history, {
      scenario: "FLUSHALL", inside: false, faultAt: flushedAt, asserts: { fences: true, stale: true },
      condition: "gap ≈ 0 < τ, but one clock that never steps (asserted)", notes: `${lost.length} lost holders`,
    })];
  });
}

/**
 * Split brain: the replica is promoted and half the clients are switched to it while the old
 * primary keeps serving the other half; then the old primary rejoins as a replica of the new one,
 * dropping what it took meanwhile, and every client uses the new one.
 */
export function splitBrain(form: Form): Promise<Row[]> {
  return withRig(form, async (rig) => {
    const first = await rig.redis("P1");
    const second = await rig.redis("P2", { replicaOf: first });
    const [left, right] = [await rig.endpoint(first), await rig.endpoint(first)];
    rig.workload.start([left, right]);
    await sleep(form.warmMs);
    await waitInSync(first, second);
    await second.admin.replicaof("NO", "ONE");
    right.proxy.switchTo(second);
    const splitAt = rig.history.note("split: P2 promoted for half the clients, P1 serves the rest");
    const lost = await rig.workload.straggle(left, rig.stragglerNames(), LOST_HOLDER_LEASE_MS, form.splitMs + form.stragglerBoundMs);
    await sleep(form.splitMs);
    await first.admin.replicaof("127.0.0.1", String(second.port));
    left.proxy.switchTo(second);
    const healedAt = rig.history.note("healed: P1 is a replica of P2");
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    return [measure(rig.history, {
      scenario: `split brain for ${seconds(form.splitMs)}`, inside: false, faultAt: healedAt, asserts: { fences: false, stale: true },
      condition: "two primaries at once",
      notes: `${failedBetween(rig, splitAt, healedAt)} acquires failed during the split, timed from the heal; ` +
        `${lost.length} holders on the old primary, lost at the heal`,
    })];
  });
}
