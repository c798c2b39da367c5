// Quorum mode: a lock set over independent Redis nodes (the Redis distlock algorithm, with fences).
import type { LockBackend } from "../core/backend.ts";
import { LockConfigError, LockUnavailableError } from "../core/errors.ts";
import { nodeRunner, type NodeConfig, type Run } from "../redis/node-runner.ts";
import { requestEnd } from "../redis/run-script.ts";
import { quorumAttempt } from "./acquire.ts";
import { quorumInspect } from "./inspect.ts";
import { LateGrants } from "./late-grants.ts";
import { quorumLease } from "./lease.ts";

/**
 * A lock set's Redis side on a majority of independent nodes. There is no line to wait in: per-node
 * queues with different heads would split the vote, so waiters back off with jitter.
 */
export function quorum(configs: readonly NodeConfig[]): LockBackend {
  const nodes = configs.map((config, node) => guarded(nodeRunner(config), node));
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

/** Requests to one node that may be out past timeoutMs at once: a hung node's would pile up without end. */
const MAX_OVERDUE = 100;

/**
 * A node's calls. The others carry on without a node that fails, and nobody would know: a
 * configuration error is said once, and a node that stops answering is sent nothing while 100
 * requests to it are out past timeoutMs (each holds memory until it ends).
 */
function guarded(run: Run, node: number): Run {
  let warned = false;
  let overdue = 0;
  return (...args) => {
    if (overdue >= MAX_OVERDUE) return Promise.reject(new LockUnavailableError(`${MAX_OVERDUE} requests to it are unanswered; none is sent until one ends.`));
    return run(...args).catch((error: unknown) => {
      const end = requestEnd(error);
      if (end && ++overdue === MAX_OVERDUE) console.warn(`fencelock: redis[${node}] has ${MAX_OVERDUE} requests unanswered past timeoutMs; it is sent nothing until one ends`);
      void end?.then(() => overdue--);
      if (error instanceof LockConfigError && !warned) {
        warned = true;
        console.warn(`fencelock: redis[${node}] is left out until fixed: ${error.message}`);
      }
      throw error;
    });
  };
}
