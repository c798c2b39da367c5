// Quorum mode: a lock set over independent Redis nodes (the Redis distlock algorithm, with fences).
import type { LockBackend } from "../core/backend.ts";
import { LockConfigError, LockUnavailableError } from "../core/errors.ts";
import { nodeRunner, type NodeConfig, type Run } from "../redis/node-runner.ts";
import { requestEnd, unsent } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
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
const SHUT_OUT = `${MAX_OVERDUE} requests to it are unanswered past timeoutMs; none is sent until one ends.`;

/**
 * A node's calls. The others carry on without a node that fails, and nobody would know: a
 * configuration error is said once, and a node that stops answering is sent nothing while 100
 * requests to it are out past timeoutMs (each holds memory until it ends).
 */
function guarded(run: Run, node: number): Run {
  let warned = false;
  let warnedAt = -Infinity;
  let overdue = 0;
  // Owners with requests out past timeoutMs here, and their releases not sent meanwhile: a heartbeat
  // still out extends the hold when the node resumes, so the release must follow it.
  const owners = new Map<string, number>();
  const releases: Parameters<Run>[] = [];
  const ended = (owner: string) => {
    const left = owners.get(owner)! - 1;
    if (left) owners.set(owner, left);
    else owners.delete(owner);
    if (--overdue < MAX_OVERDUE) releases.splice(0).forEach((args) => guard(...args).catch(() => undefined));
  };
  const guard: Run = (...args) => {
    const [script, , , owner] = args;
    if (overdue >= MAX_OVERDUE) {
      if (script === scripts.release && owners.has(owner)) releases.push(args);
      return Promise.reject(unsent(new LockUnavailableError(SHUT_OUT)));
    }
    return run(...args).catch((error: unknown) => {
      const end = requestEnd(error);
      if (end) {
        owners.set(owner, (owners.get(owner) ?? 0) + 1);
        // At most once a minute: a slow node, not hung, comes and goes.
        if (++overdue >= MAX_OVERDUE && performance.now() - warnedAt > 60_000) {
          warnedAt = performance.now();
          console.warn(`fencelock: redis[${node}]: ${SHUT_OUT}`);
        }
        void end.then(() => ended(owner));
      }
      if (error instanceof LockConfigError && !warned) {
        warned = true;
        console.warn(`fencelock: redis[${node}] is left out until fixed: ${error.message}`);
      }
      throw error;
    });
  };
  return guard;
}
