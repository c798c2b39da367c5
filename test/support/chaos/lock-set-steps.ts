import { LockLostError, LockTimeoutError, type Lease, type Locks } from "../../../src/index.ts";
import { newLockSet, receive, wakeFor, type Actor } from "./actor.ts";
import { describeError } from "./call-checks.ts";
import type { ReceivedLease } from "./history.ts";
import { MAX_LEASE_MS } from "./plan.ts";
import { readModifyWrite } from "./store-steps.ts";

/** acquire(), push or poll, its wait running out or not, now and then aborted at a random moment. */
export async function acquire(actor: Actor, locks: Locks, name: string): Promise<void> {
  const { dice, calls, history } = actor.run;
  const wake = wakeFor(actor.run, dice.chance(0.5) ? "push" : "poll");
  const waitMs = dice.pick([0, dice.int(0, 300), dice.int(200, 1_500)]);
  const leaseMs = dice.chance(0.5) ? dice.int(150, MAX_LEASE_MS) : undefined;
  const controller = dice.chance(0.3) ? new AbortController() : undefined;
  const timer = controller && setTimeout(() => controller.abort(), dice.int(0, waitMs + 200));
  const sentAt = performance.now();
  try {
    const lease = await calls.settle("acquire", calls.boundMs(waitMs), () =>
      locks.acquire(name, { wake, waitMs, ...(leaseMs && { leaseMs }), ...(controller && { signal: controller.signal }) }));
    if (controller?.signal.aborted) history.record(`a${actor.id} acquire ${name} resolved after abort`);
    receive(actor, lease, `acquire-${wake}`, sentAt);
  } catch (error) {
    const aborted = controller?.signal.aborted && error instanceof Error && error.name === "AbortError";
    const tookMs = Math.round(performance.now() - sentAt);
    history.record(`a${actor.id} acquire-${wake} ${name} wait ${waitMs} after ${tookMs} ms: ${aborted ? "aborted" : describeError(error).slice(0, 60)}`);
    if (!aborted) calls.expectError("acquire", error, LockTimeoutError);
  } finally {
    clearTimeout(timer);
  }
}

export async function tryAcquire(actor: Actor, locks: Locks, name: string): Promise<void> {
  const { dice, calls, history } = actor.run;
  const sentAt = performance.now();
  const options = dice.chance(0.5) ? { leaseMs: dice.int(150, MAX_LEASE_MS) } : {};
  try {
    const lease = await calls.settle("tryAcquire", calls.boundMs(), () => locks.tryAcquire(name, options));
    if (lease) receive(actor, lease, "tryAcquire", sentAt);
    else history.record(`a${actor.id} tryAcquire ${name}: busy`);
  } catch (error) {
    history.record(`a${actor.id} tryAcquire ${name}: ${describeError(error).slice(0, 60)}`);
    calls.expectError("tryAcquire", error);
  }
}

/**
 * A reentrant acquire by the lease's owner, maybe waiting (once the lease lapsed, it may queue
 * behind another owner). Joining a lease that is still valid keeps its fence.
 */
export async function join(actor: Actor, locks: Locks, held: ReceivedLease): Promise<void> {
  const { dice, calls, history } = actor.run;
  const validBefore = held.lease.remainingMs() > 0;
  const sentAt = performance.now();
  const options = { owner: held.owner, waitMs: dice.pick([0, 200, 1_000]), wake: wakeFor(actor.run, dice.chance(0.5) ? "push" : "poll"), leaseMs: dice.int(150, MAX_LEASE_MS) } as const;
  try {
    const lease = await calls.settle("join", calls.boundMs(1_000), () => locks.acquire(held.name, options));
    receive(actor, lease, `join(L${held.id})`, sentAt);
    const stillValid = validBefore && held.lease.remainingMs() > 0;
    if (stillValid && lease.fence !== held.fence && !history.keysLostSinceCall(held.name, held.callStart)) {
      history.violation(`join of valid L${held.id} (f${held.fence}) got fence ${lease.fence}`);
    }
  } catch (error) {
    history.record(`a${actor.id} join(L${held.id}) ${describeError(error).slice(0, 60)}`);
    calls.expectError("join", error, LockTimeoutError);
  }
}

/** Another invocation takes the lease over: resume() on a fresh client and lock set keeps the fence. */
export async function resume(actor: Actor, held: ReceivedLease): Promise<void> {
  const { calls, history } = actor.run;
  history.finish(held);
  const fresh = newLockSet(actor.run);
  actor.lockSets[0] = fresh;
  const resumed = fresh.resume({ name: held.name, owner: held.owner, fence: held.fence });
  if (resumed.fence !== held.fence) history.violation("resume changed the fence");
  try {
    await calls.settle("resumed heartbeat", calls.boundMs(), () => resumed.heartbeat());
    receive(actor, resumed, `resume(L${held.id})`, held.callStart);
  } catch (error) {
    history.record(`a${actor.id} resume(L${held.id}) heartbeat ${describeError(error).slice(0, 60)}`);
    calls.expectError("resumed heartbeat", error, LockLostError);
  }
}

/** withLock around a read-modify-write: its bound covers the wait, two store calls, a pause of up to 700 ms and the release. */
export async function withLock(actor: Actor, locks: Locks, name: string): Promise<void> {
  const { dice, calls, history } = actor.run;
  const sentAt = performance.now();
  const waitMs = dice.pick([0, 300, 1_000]);
  const work = async (lease: Lease) => {
    const held = receive(actor, lease, "withLock", sentAt);
    if (!held) return;
    await readModifyWrite(actor, held);
    history.finish(held);
  };
  try {
    await calls.settle("withLock", calls.boundMs(waitMs + 1_000), () =>
      locks.withLock(name, work, { waitMs, wake: wakeFor(actor.run, dice.chance(0.5) ? "push" : "poll") }));
  } catch (error) {
    history.record(`a${actor.id} withLock ${name}: ${describeError(error).slice(0, 60)}`);
    calls.expectError("withLock", error, LockTimeoutError);
  }
}
