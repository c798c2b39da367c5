// The model run's nemesis: one node at a time restarts empty, pauses, or has its clock shifted
// (seconds to an hour, ahead or behind) for a while; every fault ends before the next begins.
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Dice } from "../chaos/dice.ts";
import type { History } from "../chaos/history.ts";
import type { ModelNodes } from "./model-nodes.ts";
import type { ModelPlan } from "./model-plan.ts";

/** What happened to the nodes, for the fence premise afterwards. */
export interface NodeEvent {
  node: number;
  at: number;
  /** A restart loses everything; a clock event sets the node's offset from then on. */
  kind: "restart" | "clock";
  offsetMs?: number;
  /** When a restart was done: until then a read may still reach the old redis-server. */
  until?: number;
}

const OFFSETS_MS = [2_000, 8_000, 90_000, 3_600_000];

/**
 * Runs until stopped. A restart, and a clock stepped forward (which cuts every TTL on that node
 * short), are noted as keys lost on every name: the checks that rest on leases alone are waived
 * around them (docs/quorum.md: a node's clock decides validity there). Pauses lose nothing.
 */
export function startNodeNemesis(plan: ModelPlan, nodes: ModelNodes, dice: Dice, history: History) {
  const events: NodeEvent[] = [];
  const counts = { restart: 0, pause: 0, clock: 0 };
  const stopping = new AbortController();
  const wait = (ms: number) => sleep(ms, stopping.signal).then(() => true, () => false);
  const lost = () => plan.names.forEach((name) => history.keysLost(name));

  const setClock = (node: number, offsetMs: number) => {
    const forward = offsetMs > nodes.clockOffsetMs(node);
    if (forward) lost();
    nodes.setClock(node, offsetMs);
    events.push({ node, at: performance.now(), kind: "clock", offsetMs });
    history.record(`NEMESIS n${node} clock ${offsetMs >= 0 ? "+" : ""}${offsetMs} ms${forward ? " (forward: its TTLs shorten)" : ""}`);
  };

  const faulting = (async () => {
    while (await wait(dice.int(...plan.faultGapMs))) {
      const node = dice.int(0, nodes.nodes.length - 1);
      const kind = dice.pick(plan.nodeFaults);
      counts[kind]++;
      if (kind === "restart") {
        lost();
        const restart: NodeEvent = { node, at: performance.now(), kind: "restart" };
        events.push(restart);
        history.record(`NEMESIS n${node} restarting empty`);
        await nodes.restartEmpty(node);
        restart.until = performance.now();
        history.record(`NEMESIS n${node} restarted`);
      } else if (kind === "pause") {
        const ms = dice.int(50, 2 * plan.timeoutMs + 300);
        nodes.pause(node);
        history.record(`NEMESIS n${node} paused for ${ms} ms`);
        await sleep(ms);
        nodes.resume(node);
        history.record(`NEMESIS n${node} resumed`);
      } else {
        setClock(node, dice.pick([-1, 1]) * dice.pick(OFFSETS_MS));
        await sleep(dice.int(100, 1_200));
        setClock(node, 0);
      }
    }
  })();

  return {
    events,
    counts,
    /** Ends the fault under way too: every node runs, with a true clock. */
    async stop(): Promise<void> {
      stopping.abort();
      await faulting;
      nodes.healAll();
    },
  };
}
