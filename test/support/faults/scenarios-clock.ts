import { sleep } from "../../../src/waiting/backoff.ts";
import { ClockOffsetFile, clockShim, NO_COMPILER } from "./clock-shim.ts";
import { failOverLosingWrites } from "./failover.ts";
import type { Form } from "./forms.ts";
import type { RedisProcess } from "./redis-process.ts";
import type { Rig } from "./rig.ts";
import { measure, skippedRow, type Row } from "./row.ts";
import { LOST_HOLDER_LEASE_MS, withRig } from "./scenarios-data.ts";

/** How far Redis TIME may be from the intended shifted time (a busy box, a request's round trip). */
const CLOCK_TOLERANCE_MS = 500;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Fails the scenario unless `server`'s TIME reads true time shifted by `offsetMs`. */
async function verifyClock(server: RedisProcess, offsetMs: number): Promise<void> {
  const before = Date.now();
  const time = await server.timeMs();
  const skew = time - (before + Date.now()) / 2 - offsetMs;
  if (Math.abs(skew) > CLOCK_TOLERANCE_MS) {
    throw new Error(`${server.label}'s TIME is ${Math.round(skew)} ms off the intended ${offsetMs} ms shift: the clock shim is not working`);
  }
}

/** A redis-server whose wall clock reads `offsetMs` from true time, checked before use. */
async function shiftedRedis(rig: Rig, shim: string, label: string, offsetMs: number, replicaOf?: RedisProcess) {
  const file = new ClockOffsetFile(offsetMs);
  rig.onClose(() => file.remove());
  const server = await rig.redis(label, { clock: { shim, file }, ...(replicaOf && { replicaOf }) });
  await verifyClock(server, offsetMs);
  return { server, file };
}

/** Runs a clock scenario with the shim, or reports it skipped where no C compiler is found. */
async function withShim(title: string, form: Form, run: (rig: Rig, shim: string) => Promise<Row[]>): Promise<Row[]> {
  const shim = await clockShim();
  if (!shim) return [skippedRow(title, NO_COMPILER)];
  return withRig(form, (rig) => run(rig, shim));
}

/** A failover that loses the last writes to a replica whose clock reads `offsetMs` from the old primary's. */
export function failoverToShiftedClock(form: Form, offsetMs: number, gapMs: number): Promise<Row[]> {
  const lagMs = -offsetMs;
  const title = `failover to a clock ${seconds(Math.abs(offsetMs))} ${offsetMs > 0 ? "ahead" : "behind"}, gap ${seconds(gapMs)}`;
  return withShim(title, form, async (rig, shim) => {
    const primary = await rig.redis("P");
    const { server: replica } = await shiftedRedis(rig, shim, `R${offsetMs > 0 ? "+" : ""}${offsetMs / 1000}s`, offsetMs, primary);
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const plan = { from: primary, to: replica, endpoint, gapMs, stragglerLeaseMs: LOST_HOLDER_LEASE_MS };
    const { killedAt, lostHolders } = await failOverLosingWrites(rig, plan);
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    const inside = gapMs > lagMs + 1_000;
    const condition = lagMs < 0
      ? "new clock ahead (lag < 0): fences hold, TTLs shorten"
      : `gap ${seconds(gapMs)} ${inside ? ">" : "<"} lag ${seconds(lagMs)} + τ 1 s`;
    // Outside, fences can regress below a lost holder's, and its late write is then accepted: reported only.
    return [measure(rig.history, { scenario: title, inside, condition, faultAt: killedAt, notes: lostHolders })];
  });
}

/** Steps a live primary's clock back: minting waits until the clock is within τ of the last fences. */
export function clockStepBack(form: Form): Promise<Row[]> {
  const title = `clock stepped back ${seconds(form.stepBackMs)} on a live primary`;
  return withShim(title, form, async (rig, shim) => {
    const { server: primary, file } = await shiftedRedis(rig, shim, "P", 0);
    const endpoint = await rig.endpoint(primary);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const before = await rig.workload.straggle(endpoint, rig.stragglerNames(), form.leaseMs, form.stepBackMs + form.stragglerBoundMs);
    file.set(-form.stepBackMs);
    const steppedAt = rig.history.note(`P's clock stepped back ${form.stepBackMs} ms`);
    await verifyClock(primary, -form.stepBackMs);
    await rig.runFor(form.stepBackMs + form.afterMs);
    await rig.workload.stop();
    return [measure(rig.history, {
      scenario: title, inside: true, faultAt: steppedAt, condition: "no fence lost",
      notes: `${before.length} holders from before the step`,
    })];
  });
}

/** Waits until acquires have succeeded since `since` and none has failed for `quietMs`. */
async function waitUntilAcquiring(rig: Rig, since: number, quietMs: number, withinMs = 60_000): Promise<void> {
  const { history } = rig;
  while (performance.now() - since < withinMs) {
    const lastFailure = Math.max(since, ...history.failures.map((failure) => failure.at));
    const succeeded = history.leases.some((held) => held.callStart > lastFailure);
    if (succeeded && performance.now() - lastFailure >= quietMs) return;
    await sleep(100);
  }
  throw new Error(`acquires did not come back within ${withinMs} ms of the fault`);
}

/**
 * The chain: A's clock runs fast; A fails over (writes lost) to B, whose clock is right; B fails
 * over (writes lost) to C, whose clock equals B's. Without the 1 s rule B minted fences from A's
 * lead, far ahead of its own clock, and C minted the same ones again for new holders.
 */
export function chain(form: Form): Promise<Row[]> {
  const lead = form.chainLeadMs;
  const title = `chain: A (+${seconds(lead)})`;
  return withShim(title, form, async (rig, shim) => {
    const { server: a } = await shiftedRedis(rig, shim, `A+${lead / 1000}s`, lead);
    const b = await rig.redis("B", { replicaOf: a });
    const c = await rig.redis("C");
    const endpoint = await rig.endpoint(a);
    rig.workload.start([endpoint]);
    await sleep(form.warmMs);
    const failover = { endpoint, gapMs: form.gapMs, stragglerLeaseMs: LOST_HOLDER_LEASE_MS };
    const first = await failOverLosingWrites(rig, { ...failover, from: a, to: b, spare: rig.stragglerNames(1) });
    await c.admin.replicaof("127.0.0.1", String(b.port));
    await waitUntilAcquiring(rig, first.killedAt, 1_000);
    const second = await failOverLosingWrites(rig, { ...failover, from: b, to: c, round: 1 });
    await rig.runFor(form.afterMs);
    await rig.workload.stop();
    const onA = (held: { era: string }) => held.era === a.label;
    return [
      measure(rig.history, {
        scenario: `${title} → B, writes lost`, inside: false, faultAt: first.killedAt, until: second.killedAt, earlier: onA,
        condition: `gap ${seconds(form.gapMs)} < lag ${seconds(lead)} + τ 1 s`, notes: `on A: ${first.lostHolders}`,
      }),
      measure(rig.history, {
        scenario: `${title} → B → C, writes lost`, inside: true, faultAt: second.killedAt, earlier: (held) => !onA(held),
        condition: `gap ${seconds(form.gapMs)} > lag 0 + τ 1 s`, notes: `on B: ${second.lostHolders}`,
      }),
    ];
  });
}
