import { StaleFenceError } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Actor } from "./actor.ts";
import type { ReceivedLease, StoreCall } from "./history.ts";

/** What every write stores: its tag, and a counter's count. */
export interface StoredValue {
  n?: number;
  tag: string;
}

/**
 * A claimed read-modify-write of the lock's counter: claim + read, maybe work long enough for a
 * short lease to lapse, then write n + 1 under its fence all the same: the store decides what counts.
 */
export async function readModifyWrite(actor: Actor, held: ReceivedLease): Promise<void> {
  const { dice } = actor.run;
  if (actor.fencesInDoubt.has(held.fence)) return;
  const resource = `counter:${held.name}`;
  const n = await claimAndRead(actor, held, resource);
  if (n === undefined) return;
  if (dice.chance(0.3)) await sleep(dice.int(0, 700));
  if (!actor.fencesInDoubt.has(held.fence)) await write(actor, held, resource, n + 1);
}

/** A write with no count, so only its fence and its order count. */
export async function blindWrite(actor: Actor, held: ReceivedLease): Promise<void> {
  if (!actor.fencesInDoubt.has(held.fence)) await write(actor, held, `blob:${held.name}`);
}

/** The count read under a claim of the lease's fence; undefined when the claim was refused or unanswered. */
async function claimAndRead(actor: Actor, held: ReceivedLease, resource: string): Promise<number | undefined> {
  const { history, calls } = actor.run;
  const claim = sent(actor, held, resource, { kind: "claim" });
  let n = 0;
  try {
    const read = await calls.settle("claim+read", calls.boundMs(), () => actor.store.read<StoredValue>(resource, { fence: held.fence }));
    claim.outcome = "ok";
    n = read?.value.n ?? 0;
    // An idle record that expired starts the count again: its increments cannot be compared.
    const written = history.storeCalls.some((call) => call.resource === resource && call.kind === "write" && call.outcome !== "stale");
    if (!read && written) history.restartedCounters.add(resource);
  } catch (error) {
    if (error instanceof StaleFenceError) refused(claim, error);
    calls.expectError("claim+read", error, StaleFenceError);
  } finally {
    claim.repliedAt = performance.now();
  }
  history.record(`a${actor.id} L${held.id} claim ${resource} f${held.fence} -> ${claim.outcome}${claim.outcome === "ok" ? ` n=${n}` : ""}`);
  return claim.outcome === "ok" ? n : undefined;
}

/** Writes under the lease's fence: a counter's count `n`, or (without one) a blind write. */
async function write(actor: Actor, held: ReceivedLease, resource: string, n?: number): Promise<void> {
  const { history, calls } = actor.run;
  const tag = `w${history.storeCalls.length + 1}`;
  const call = sent(actor, held, resource, { kind: "write", tag, n });
  try {
    await calls.settle("write", calls.boundMs(), () => actor.store.write(resource, { n, tag }, held.fence));
    call.outcome = "ok";
  } catch (error) {
    if (error instanceof StaleFenceError) refused(call, error);
    else actor.fencesInDoubt.add(held.fence);
    calls.expectError("write", error, StaleFenceError);
  } finally {
    call.repliedAt = performance.now();
  }
  history.record(`a${actor.id} L${held.id} write ${resource} ${tag}${n === undefined ? "" : ` n=${n}`} f${held.fence} -> ${call.outcome}`);
}

/** Records a store call as it goes out; its outcome stays "unknown" until an answer comes. */
function sent(actor: Actor, held: ReceivedLease, resource: string, what: Pick<StoreCall, "kind" | "tag" | "n">): StoreCall {
  const call: StoreCall = { actor: actor.id, resource, ...what, fence: held.fence, sentAt: performance.now(), repliedAt: 0, outcome: "unknown" };
  actor.run.history.storeCalls.push(call);
  return call;
}

function refused(call: StoreCall, error: StaleFenceError): void {
  call.outcome = "stale";
  call.highest = error.highestFence;
}
