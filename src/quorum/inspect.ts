// A quorum's view of a lock: held only where a majority of nodes hold it with one fence.
import type { LockState } from "../core/backend.ts";
import { stateOf, type Run } from "../redis/node-runner.ts";
import * as scripts from "../redis/scripts.gen.ts";
import { count, gather, majorityOf, unavailable } from "./gather.ts";

/** inspect(name): the quorum's state, and each node's own (never an owner). */
export function quorumInspect(nodes: readonly Run[]) {
  const majority = majorityOf(nodes.length);
  return async function inspect(name: string): Promise<LockState> {
    const answers = await gather(nodes.map((run) => run(scripts.inspect, name, [], "")), () => false);
    if (count(answers) < majority) throw unavailable(`Inspecting "${name}"`, answers, 0);
    const states = answers.map((a) => (a && "reply" in a ? stateOf(a.reply) : null));
    const known = states.filter((s) => s !== null);
    const waiters = Math.max(...known.map((s) => s.waiters));
    for (const { fence } of known) {
      const holding = known.filter((s) => s.held && s.fence === fence);
      if (holding.length < majority) continue;
      // Held until fewer than a majority still hold it.
      const remainingMs = holding.map((s) => s.remainingMs).sort((a, b) => b - a)[majority - 1]!;
      const holds = Math.min(...holding.map((s) => s.holds));
      return { held: true, fence, remainingMs, holds, waiters, nodes: states };
    }
    // Free: the highest fence any node remembers; the next holder's is higher.
    const fence = Math.max(0, ...known.map((s) => s.fence ?? 0)) || null;
    return { held: false, fence, remainingMs: 0, holds: 0, waiters, nodes: states };
  };
}
