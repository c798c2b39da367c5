import { createFencedStore, createLocks, type FencedStore, type Lease, type Locks } from "../../../src/index.ts";
import type { RedisClient } from "../../../src/core/client.ts";
import { upstash } from "../upstash.ts";
import type { CallChecks } from "./call-checks.ts";
import { sampleMutualExclusion } from "./check-mutual-exclusion.ts";
import type { Dice } from "./dice.ts";
import type { History, ReceivedLease } from "./history.ts";
import { MAX_LEASE_MS, type ChaosPlan } from "./plan.ts";

/** What all actors of one run share. */
export interface Run {
  plan: ChaosPlan;
  dice: Dice;
  history: History;
  calls: CallChecks;
  /**
   * What each new lock set runs on (default: one chaos client of the shared server). Quorum chaos
   * gives an array of clients, one per node.
   */
  lockRedis?: () => RedisClient | RedisClient[];
  /** Quorum mode has no push wake-ups: every draw of "push" waits by polling instead (the dice roll the same). */
  pollOnly?: boolean;
}

/** The wake-up a step drew, or "poll" where the run has no push. */
export function wakeFor(run: Run, drawn: "push" | "poll"): "push" | "poll" {
  return run.pollOnly ? "poll" : drawn;
}

/** One actor: an invocation with lock sets and a fenced store on @upstash/redis clients of its own. */
export interface Actor {
  id: number;
  run: Run;
  /** Two, as two parts of one invocation may each make one; resume() replaces the first. */
  lockSets: Locks[];
  store: FencedStore;
  /**
   * Fences under which a write got no answer: it may still land, over a later write of the same
   * fence (which the store accepts), so nothing more is written under them.
   */
  fencesInDoubt: Set<number>;
}

/** Quick retries: the faults, not the client's backoff, should decide how long a run takes. */
function chaosClient() {
  return upstash({ retry: { retries: 3, backoff: () => 10 } });
}

export function newLockSet(run: Run, waitMs?: number): Locks {
  const { prefix, timeoutMs } = run.plan;
  const leaseMs = run.dice.int(200, MAX_LEASE_MS);
  return createLocks({ redis: run.lockRedis?.() ?? chaosClient(), prefix, timeoutMs, leaseMs, ...(waitMs !== undefined && { waitMs }) });
}

export function newActor(run: Run, id: number): Actor {
  const { prefix, timeoutMs, storeTtlMs } = run.plan;
  const lockSets = [0, 1].map(() => newLockSet(run, run.dice.int(0, 1_500)));
  const store = createFencedStore({ redis: chaosClient(), prefix, timeoutMs, ...(storeTtlMs && { ttlMs: storeTtlMs }) });
  return { id, run, lockSets, store, fencesInDoubt: new Set() };
}

/** The leases the actor still uses. */
export function heldBy(actor: Actor): ReceivedLease[] {
  return actor.run.history.leases.filter((held) => held.actor === actor.id && !held.done);
}

/** Notes a lease the actor got, and checks at once that no other owner believes it holds that lock. */
export function receive(actor: Actor, lease: Lease, how: string, callStart: number): ReceivedLease | undefined {
  const { history, plan } = actor.run;
  const held = history.receive(actor.id, lease, how, callStart);
  if (held) sampleMutualExclusion(history, plan.names, `after ${how}`);
  return held;
}
