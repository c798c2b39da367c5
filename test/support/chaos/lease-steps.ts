import { LockLostError } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Actor } from "./actor.ts";
import { describeError } from "./call-checks.ts";
import type { ReceivedLease } from "./history.ts";

/** Extends a lease; a LockLostError while it was still valid here is a violation. */
export async function heartbeat(actor: Actor, held: ReceivedLease): Promise<void> {
  const { history, calls } = actor.run;
  const deadline = performance.now() + held.lease.remainingMs();
  try {
    await calls.settle("heartbeat", calls.boundMs(), () => held.lease.heartbeat());
    history.extend(held);
    history.record(`a${actor.id} L${held.id} heartbeat ok, valid ${Math.round(held.lease.remainingMs())} ms`);
  } catch (error) {
    history.record(`a${actor.id} L${held.id} heartbeat ${describeError(error).slice(0, 60)}`);
    calls.expectError("heartbeat", error, LockLostError);
    // A release racing it may have let go first: only a lease still in use counts.
    if (error instanceof LockLostError && !held.done) checkNotLetGoEarly(actor, held, deadline, "heartbeat", "lost");
  }
}

/**
 * Gives a lease back; with `again`, a failed release is called again, as a user would, and must
 * answer as the first call would have. "expired" while the lease was still valid here is a violation.
 */
export async function release(actor: Actor, held: ReceivedLease, again: boolean): Promise<void> {
  const { history, calls, dice } = actor.run;
  const deadline = performance.now() + held.lease.remainingMs();
  history.finish(held);
  for (let attempt = 0; attempt < (again ? 3 : 1); attempt++) {
    const what = `a${actor.id} L${held.id} release${attempt ? " again" : ""}`;
    try {
      const outcome = await calls.settle("release", calls.boundMs(), () => held.lease.release());
      history.record(`${what} -> ${outcome}`);
      if (outcome === "expired") checkNotLetGoEarly(actor, held, deadline, "release", "said expired");
      if (held.lease.remainingMs() !== 0) history.violation(`L${held.id} released but has time left`);
      return;
    } catch (error) {
      history.record(`${what} failed: ${describeError(error).slice(0, 60)}`);
      calls.expectError("release", error);
      if (again) await sleep(dice.int(0, 300));
    }
  }
}

/**
 * The server cannot let go of a lease before its local deadline (the client trusts it for less
 * than its TTL), unless the nemesis deleted its keys.
 */
function checkNotLetGoEarly(actor: Actor, held: ReceivedLease, deadline: number, call: string, answer: string): void {
  const { history } = actor.run;
  const leftMs = deadline - performance.now();
  if (leftMs <= 1 || history.keysLostSinceCall(held.name, held.callStart)) return;
  history.violation(`${call} of L${held.id} (${held.name} f${held.fence}) ${answer} with ${Math.round(leftMs)} ms of validity left`);
}
