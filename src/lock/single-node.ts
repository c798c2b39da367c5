// The Redis side of a lock set on one Redis: each call one script.
import { driftMs, type BusyAttempt, type Grant, type LockBackend } from "../core/backend.ts";
import { nodeReader, nodeRunner, stateOf, type NodeConfig, type RunAndRead } from "../redis/node-runner.ts";
import { unexpectedReply } from "../redis/failures.ts";
import { RETRY_WINDOW_MS, type Integers } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";

/** A lock set's Redis side on one Redis, with a fair queue. */
export function singleNode(config: NodeConfig): LockBackend {
  const run = nodeRunner(config);
  const runAndRead = nodeReader(config);
  return {
    attempt: (name, owner, ticket, leaseMs, queueMs) => attemptOn(runAndRead, name, owner, ticket, leaseMs, queueMs),
    leave: (name, ticket) => run(scripts.leave, name, [ticket], ""),
    async heartbeat(lease, leaseMs) {
      const args = [lease.owner, lease.fence, leaseMs, leaseMs + RETRY_WINDOW_MS];
      const [extended, ttl] = await run(scripts.heartbeat, lease.name, args, lease.owner);
      return extended === 1 ? ttl : null;
    },
    release(lease, requestId) {
      const args = [lease.owner, lease.fence, requestId, RETRY_WINDOW_MS];
      return runAndRead(scripts.release, lease.name, args, lease.owner, lease.fence, ([released]) => (released === 1 ? "released" : "expired"));
    },
    inspect: async (name) => stateOf(await run(scripts.inspect, name, [], "")),
  };
}

/** One attempt on one node: the grant, or what the busy lock looked like. Not async: see runScript. */
function attemptOn(runAndRead: RunAndRead, name: string, owner: string, ticket: string, leaseMs: number, queueMs: number): Promise<Grant | BusyAttempt> {
  const sentAt = performance.now();
  const args = [owner, ticket, leaseMs, leaseMs + RETRY_WINDOW_MS, queueMs];
  return runAndRead(scripts.acquire, name, args, owner, undefined, (reply) => outcomeOf(reply, sentAt, leaseMs));
}

/** acquire.lua's reply, read. */
function outcomeOf(reply: Integers, sentAt: number, leaseMs: number): Grant | BusyAttempt {
  if (reply[0] !== 1) {
    const [, ttlMs, position, newestFence] = reply; // {0, ttlMs, position, newest}
    return { busyForMs: Math.max(0, ttlMs), clockBehindMs: Math.max(0, -ttlMs), position, newestFence };
  }
  const [, fence, , ttlMs] = reply; // {1, fence, holds, ttlMs}
  // Only data under the prefix that is not fencelock's could hold such a fence.
  if (fence <= 0) throw unexpectedReply(scripts.acquire, reply);
  // A join may find the lock with more TTL than leaseMs; the drift allowance grows with it.
  const validUntil = sentAt + ttlMs - driftMs(ttlMs);
  // Too late to use. The hold stays for the next attempt to rejoin, or for leave to give back:
  // giving it back now, a late duplicate could undo the next attempt's hold.
  if (validUntil - performance.now() < leaseMs / 10) return { busyForMs: -1, clockBehindMs: 0, position: -1, newestFence: fence };
  return { fence, validUntil };
}
