// A model client's random program: the lock calls of the chaos actors (test/support/chaos), in a
// mix that favours reentrant joins, heartbeats and leases left to lapse, with a few fenced
// read-modify-writes.
import { sleep } from "../../../src/waiting/backoff.ts";
import { heldBy, type Actor } from "../chaos/actor.ts";
import { sampleMutualExclusion } from "../chaos/check-mutual-exclusion.ts";
import type { ReceivedLease } from "../chaos/history.ts";
import { heartbeat, release } from "../chaos/lease-steps.ts";
import { pick } from "../chaos/program.ts";
import { acquire, join, resume, tryAcquire } from "../chaos/lock-set-steps.ts";
import { readModifyWrite } from "../chaos/store-steps.ts";
import type { Locks } from "../../../src/index.ts";

interface Draw {
  locks: Locks;
  name: string;
  held: ReceivedLease;
}

type Step = (actor: Actor, draw: Draw) => Promise<unknown>;

// Each step's share, per mille; a client that holds nothing acquires.
const STEPS: [perMille: number, step: Step][] = [
  [200, (actor, { locks, name }) => acquire(actor, locks, name)],
  [150, (actor, { locks, name }) => tryAcquire(actor, locks, name)],
  [140, (actor, { locks, held }) => join(actor, locks, held)],
  [150, (actor, { held }) => heartbeat(actor, held)],
  [140, (actor, { held }) => release(actor, held, actor.run.dice.chance(0.6))],
  [30, (actor, { held }) => resume(actor, held)],
  [60, (actor, { held }) => readModifyWrite(actor, held)],
  [30, (actor, { held }) => Promise.all([heartbeat(actor, held), release(actor, held, true)])],
  [30, (actor, { locks, held }) => Promise.all([join(actor, locks, held), release(actor, held, actor.run.dice.chance(0.5))])],
  // Left to lapse, or not quite.
  [70, (actor) => sleep(actor.run.dice.int(0, 1_000))],
];

/**
 * `steps[0]` to `steps[1]` steps, then gives back what it still holds. `afterStep` runs after each (the run reads
 * which nodes carry the fences of leases just received before the client goes on).
 */
export async function runModelProgram(actor: Actor, [fewest, most]: [number, number], afterStep: () => Promise<void>): Promise<void> {
  const { dice, history, plan } = actor.run;
  const steps = dice.int(fewest, most);
  for (let i = 0; i < steps; i++) {
    const locks = dice.pick(actor.lockSets);
    const name = dice.pick(plan.names);
    const mine = heldBy(actor);
    const held = mine.length ? dice.pick(mine) : undefined;
    const step = pick(STEPS, dice.fraction());
    await (held ? step(actor, { locks, name, held }) : acquire(actor, locks, name));
    await afterStep();
    sampleMutualExclusion(history, plan.names, "after step");
  }
  for (const held of heldBy(actor)) await release(actor, held, true);
}
