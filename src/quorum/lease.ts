// A quorum lease's heartbeat and release: sent to every node, decided by a majority.
import type { HeldLease, LockBackend } from "../core/backend.ts";
import { newToken } from "../core/keys.ts";
import type { Run } from "../redis/node-runner.ts";
import { RETRY_WINDOW_MS, type Integers } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
import { count, gather, majorityOf, unavailable, vote, type Answer } from "./gather.ts";

const isYes = (reply: Integers) => reply[0] === 1;

/**
 * What the answers settle: "yes" when a majority said yes, "no" when enough said no that a majority
 * cannot, and otherwise (failures in the way) QuorumUnavailableError: the outcome is unknown.
 */
function outcome(what: string, answers: readonly Answer<Integers>[]): "yes" | "no" {
  const majority = majorityOf(answers.length);
  const ayes = count(answers, isYes);
  if (ayes >= majority) return "yes";
  if (count(answers, (reply) => !isYes(reply)) > answers.length - majority) return "no";
  throw unavailable(what, answers, ayes);
}

/** Heartbeat and release of quorum leases. */
export function quorumLease(nodes: readonly Run[]): Pick<LockBackend, "heartbeat" | "release"> {
  const majority = majorityOf(nodes.length);
  return {
    async heartbeat(lease, leaseMs) {
      const args = [lease.owner, lease.fence, leaseMs, leaseMs + RETRY_WINDOW_MS];
      const answers = await gather(nodes.map((run) => run(scripts.heartbeat, lease.name, args, lease.owner)), vote(isYes));
      if (outcome(`Heartbeat of "${lease.name}"`, answers) === "no") return null;
      answers.forEach((a, node) => a && "reply" in a && !isYes(a.reply) && repair(nodes[node]!, lease, leaseMs));
      // Held while a majority holds it: the majority-th longest TTL.
      return answers.flatMap((a) => (a && "reply" in a && isYes(a.reply) ? [a.reply[1]] : [])).sort((a, b) => b - a)[majority - 1]!;
    },
    async release(lease, requestId) {
      const args = [lease.owner, lease.fence, requestId, RETRY_WINDOW_MS];
      // The slower nodes release too, after the caller has its outcome.
      const answers = await gather(nodes.map((run) => run(scripts.release, lease.name, args, lease.owner, lease.fence)), vote(isYes));
      return outcome(`Release of "${lease.name}"`, answers) === "yes" ? "released" : "expired";
    },
  };
}

/**
 * Takes the lease again on a node that lost it (restarted empty, or its key lapsed) while a majority
 * holds it, so that it keeps a majority if another node fails. Safe: no one else can hold a majority
 * meanwhile, and the node mints its own fence first, so its last fence never goes back.
 */
function repair(run: Run, lease: HeldLease, leaseMs: number): void {
  const ticket = newToken();
  const fenceTtlMs = leaseMs + RETRY_WINDOW_MS;
  // Proposed: a node that knows no higher fence mints the lease's own.
  run(scripts.acquire, lease.name, [lease.owner, ticket, leaseMs, fenceTtlMs, 0, lease.fence], lease.owner)
    .then(([granted, minted]) => {
      if (granted === 1 && minted !== lease.fence) {
        return run(scripts.adopt, lease.name, [lease.owner, ticket, minted, lease.fence, fenceTtlMs], lease.owner);
      }
    })
    .catch(() => undefined);
}
