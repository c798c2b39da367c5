// Quorum mode: a lock set over independent Redis nodes (the Redis distlock algorithm, with fences).
import type { LockBackend } from "../core/backend.ts";
import { LockConfigError } from "../core/errors.ts";
import { nodeRunner, type NodeConfig, type Run } from "../redis/node-runner.ts";
import { quorumAttempt } from "./acquire.ts";
import { quorumInspect } from "./inspect.ts";
import { LateGrants } from "./late-grants.ts";
import { quorumLease } from "./lease.ts";

/**
 * A lock set's Redis side on a majority of independent nodes. There is no line to wait in: per-node
 * queues with different heads would split the vote, so waiters back off with jitter.
 */
export function quorum(configs: readonly NodeConfig[]): LockBackend {
  const nodes = configs.map((config, node) => warnedOnce(nodeRunner(config), node));
  const late = new LateGrants();
  const attempt = quorumAttempt(nodes, late);
  return {
    attempt: (name, owner, _ticket, leaseMs) => attempt(name, owner, leaseMs),
    // Each attempt gives back what it took; there is no line to leave.
    leave: async () => undefined,
    ...quorumLease(nodes, late),
    inspect: quorumInspect(nodes),
  };
}

/** A node's configuration error, said once: the others carry on without it, and nobody would know. */
function warnedOnce(run: Run, node: number): Run {
  let warned = false;
  return (...args) => run(...args).catch((error: unknown) => {
    if (error instanceof LockConfigError && !warned) {
      warned = true;
      console.warn(`fencelock: redis[${node}] is left out until fixed: ${error.message}`);
    }
    throw error;
  });
}
