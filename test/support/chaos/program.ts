import type { Locks } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { heldBy, type Actor } from "./actor.ts";
import { sampleMutualExclusion } from "./check-mutual-exclusion.ts";
import type { ReceivedLease } from "./history.ts";
import { heartbeat, release } from "./lease-steps.ts";
import { acquire, join, resume, tryAcquire, withLock } from "./lock-set-steps.ts";
import { blindWrite, readModifyWrite } from "./store-steps.ts";

/** What a step may use: a lock set and name drawn for it, and one of the actor's leases. */
interface Draw {
  locks: Locks;
  name: string;
  held: ReceivedLease;
}

type Step = (actor: Actor, draw: Draw) => Promise<unknown>;

/** A heartbeat and a release of one lease at once. */
const heartbeatDuringRelease: Step = (actor, { held }) => Promise.all([heartbeat(actor, held), release(actor, held, true)]);

/** The owner joins its lease while the lease is being released. */
const joinDuringRelease: Step = (actor, { locks, held }) =>
  Promise.all([join(actor, locks, held), release(actor, held, actor.run.dice.chance(0.5))]);

// Each step's share, per mille; an actor that holds nothing acquires.
const STEPS: [perMille: number, step: Step][] = [
  [250, (actor, { locks, name }) => acquire(actor, locks, name)],
  [100, (actor, { locks, name }) => tryAcquire(actor, locks, name)],
  [100, (actor, { locks, held }) => join(actor, locks, held)],
  [100, (actor, { held }) => heartbeat(actor, held)],
  [130, (actor, { held }) => release(actor, held, actor.run.dice.chance(0.6))],
  [40, (actor, { held }) => resume(actor, held)],
  [160, (actor, { held }) => readModifyWrite(actor, held)],
  [50, (actor, { held }) => blindWrite(actor, held)],
  [20, heartbeatDuringRelease],
  [20, joinDuringRelease],
  [15, (actor, { locks, name }) => withLock(actor, locks, name)],
  [15, (actor) => sleep(actor.run.dice.int(0, 600))],
];

/** The step a roll in [0, 1) lands on, each step taking its share per mille of the range. */
export function pick<S>(steps: readonly [perMille: number, step: S][], roll: number): S {
  let below = 0;
  for (const [perMille, step] of steps) {
    below += perMille;
    if (roll * 1000 < below) return step;
  }
  throw new Error("the steps' shares add up to less than 1000");
}

/** An actor's random program: 8 to 16 steps, then it gives back what it still holds (calling a failed release again). */
export async function runProgram(actor: Actor): Promise<void> {
  const { dice, history, plan } = actor.run;
  const steps = dice.int(8, 16);
  for (let i = 0; i < steps; i++) {
    const locks = dice.pick(actor.lockSets);
    const name = dice.pick(plan.names);
    const mine = heldBy(actor);
    const held = mine.length ? dice.pick(mine) : undefined;
    const step = pick(STEPS, dice.fraction());
    sampleMutualExclusion(history, plan.names, "before step");
    await (held ? step(actor, { locks, name, held }) : acquire(actor, locks, name));
    sampleMutualExclusion(history, plan.names, "after step");
  }
  for (const held of heldBy(actor)) await release(actor, held, true);
}
