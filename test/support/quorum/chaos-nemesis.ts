// A minority forgets: every 0.2-1.5 s the nemesis deletes a lock's hold on one node (and, where the
// plan allows, that node's fence counter too), as a node restarting empty would.
import { lockKeys } from "../lock-keys.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Dice } from "../chaos/dice.ts";
import type { History } from "../chaos/history.ts";
import type { ChaosNodes } from "./chaos-nodes.ts";
import type { QuorumChaosPlan } from "./chaos-plan.ts";

/**
 * Noted in the history as keys lost: the checks that rest on leases alone (mutual exclusion, a
 * join keeping its fence, a heartbeat or release finding the lease) are waived around it; the
 * fence order is not.
 */
export function startQuorumNemesis(plan: QuorumChaosPlan, nodes: ChaosNodes, dice: Dice, history: History): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const pause = (ms: number) => sleep(ms, stopping.signal).then(() => true, () => false);
  const deleting = (async () => {
    while (await pause(dice.int(200, 1_500))) {
      const name = dice.pick(plan.names);
      const node = dice.int(0, nodes.admin.length - 1);
      const keys = lockKeys(plan.prefix, name);
      const lost = plan.nemesisDeletesFences && dice.chance(0.5) ? [keys.lock, keys.fence] : [keys.lock];
      history.keysLost(name);
      await nodes.admin[node]!.del(...lost).catch(() => undefined);
      history.record(`NEMESIS deleted ${lost.join(" ")} on n${node}`);
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await deleting;
    },
  };
}
