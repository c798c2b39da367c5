// The libraries of the quorum bench: fencelock over N nodes (quorum mode) or one of them, and
// node-redlock over N ioredis connections to the same redis-servers. Each records what the bench
// checks afterwards: every acquire's fence and script calls, and every error it rode out.
import { Redis } from "@upstash/redis";
import type { Redis as IORedis } from "ioredis";
import Redlock, { ExecutionError, type Lock } from "redlock";
import { createLocks } from "../../src/index.ts";
import { LockTimeoutError, LockUnavailableError } from "../../src/core/errors.ts";
import type { Lease } from "../../src/lock/lease.ts";
import { countedConnection } from "../harness/requests.ts";
import { ScriptCalls, scriptScope } from "../harness/script-calls.ts";
import type { Endpoint } from "../harness/server.ts";
import { now } from "../harness/timing.ts";
import { recorder, type AcquireRecord, type Anomalies, type Recorder } from "./quorum-recorder.ts";
import type { Library, LockAdapter } from "./types.ts";

/** Longest single acquire() wait; a LockTimeoutError after it counts as an exhausted window. */
const WAIT_MS = 60_000;
const LEASE_MS = 10_000;

export interface QuorumBenchLibrary extends Library {
  /** The nodes each client talks to. */
  nodes: number;
  /** Whether its acquires carry a fence (fencelock) that the bench can check. */
  fenced: boolean;
  /** Hands over the acquires recorded since the last call, and starts a new list. */
  take(): AcquireRecord[];
  anomalies(): Anomalies;
}

/**
 * fencelock over `endpoints`: quorum mode for 3 or more (`redis: [a, b, c]`), single-node for one,
 * with defaults (leaseMs 10 s, timeoutMs 3 s, backoff between attempts).
 */
export function fencelockNodesLibrary(
  endpoints: readonly Endpoint[],
  prefix: string,
  variant?: { id: string; label: string; note: string },
): QuorumBenchLibrary {
  const quorum = endpoints.length > 1;
  const record = recorder();
  return {
    id: variant?.id ?? (quorum ? `fencelock-quorum-${endpoints.length}` : "fencelock-single"),
    label: variant?.label ?? (quorum ? `fencelock quorum (N = ${endpoints.length})` : "fencelock, one node"),
    transport: "http",
    settings: (variant ? `${variant.note}; ` : "") + (quorum
      ? `createLocks({ redis: [${endpoints.length} × new Redis({ url, token })], prefix }) with defaults (leaseMs 10 s, timeoutMs 3 s per node); ` +
        "acquire(name, { waitMs: 60_000 }): jittered backoff, no queue"
      : "createLocks({ redis: new Redis({ url, token }), prefix }) with defaults (leaseMs 10 s) on node 1 of the quorum; " +
        "acquire(name, { waitMs: 60_000 }): its queue and default backoff"),
    nodes: endpoints.length,
    fenced: true,
    take: record.take,
    anomalies: record.anomalies,
    connect: async () => {
      const clients = endpoints.map((e) => new Redis({ url: e.url, token: e.token }));
      const locks = createLocks({ redis: quorum ? clients : clients[0]!, prefix });
      return connectFencelock(locks, record, quorum ? "fencelock quorum" : "fencelock one node");
    },
  };
}

function connectFencelock(locks: ReturnType<typeof createLocks>, record: Recorder, name: string): LockAdapter<Lease> {
  const adapter = {
    name,
    exhausted: 0,
    acquire: async (lockName: string, signal?: AbortSignal) => {
      for (;;) {
        signal?.throwIfAborted();
        const calls = new ScriptCalls();
        try {
          const lease = await scriptScope(calls, () => locks.acquire(lockName, { waitMs: WAIT_MS, signal }));
          record.acquired({
            name: lockName, fence: lease.fence, at: now(), calls,
            acquireCalls: calls.count("acquire"), adoptBefore: calls.count("adopt"),
          });
          return lease;
        } catch (error) {
          if (signal?.aborted) throw error;
          if (error instanceof LockTimeoutError) adapter.exhausted += 1;
          else if (error instanceof LockUnavailableError) record.error(error);
          else throw error;
        }
      }
    },
    release: async (lease: Lease) => {
      try {
        if ((await lease.release()) !== "released") record.failedRelease();
      } catch (error) {
        record.failedRelease();
        record.error(error);
      }
    },
    close: async () => undefined,
  };
  return adapter;
}

/** node-redlock 5 over N ioredis connections, one per redis-server, with its defaults. */
export function redlockNodesLibrary(endpoints: readonly Endpoint[]): QuorumBenchLibrary {
  const record = recorder();
  return {
    id: `redlock-${endpoints.length}`,
    label: `redlock (TCP, N = ${endpoints.length})`,
    transport: "tcp",
    settings: `new Redlock([${endpoints.length} × ioredis]) with defaults: retryCount 10, retryDelay 200 ms, retryJitter ±100 ms, ` +
      `driftFactor 0.01; acquire([key], ${LEASE_MS}); when its 11 attempts run out (ExecutionError) acquire is called again`,
    nodes: endpoints.length,
    fenced: false,
    take: record.take,
    anomalies: record.anomalies,
    connect: () => connectRedlock(endpoints, record),
  };
}

async function connectRedlock(endpoints: readonly Endpoint[], record: Recorder): Promise<LockAdapter<Lock>> {
  const clients = await connectAll(endpoints);
  const redlock = new Redlock(clients);
  // Redlock is an EventEmitter: an unhandled "error" event would end the process.
  redlock.on("error", () => undefined);
  const adapter = {
    name: "redlock",
    exhausted: 0,
    acquire: async (name: string, signal?: AbortSignal): Promise<Lock> => {
      for (;;) {
        signal?.throwIfAborted();
        try {
          return await redlock.acquire([`rlq:${name}`], LEASE_MS);
        } catch (error) {
          if (!(error instanceof ExecutionError)) throw error;
          adapter.exhausted += 1;
        }
      }
    },
    release: async (lock: Lock) => {
      try {
        await lock.release();
      } catch (error) {
        record.failedRelease();
        record.error(error);
      }
    },
    close: async () => {
      await Promise.allSettled(clients.map((c) => c.quit()));
    },
  };
  return adapter;
}

/** One counted ioredis connection per redis-server; those made are closed if one fails. */
async function connectAll(endpoints: readonly Endpoint[]): Promise<IORedis[]> {
  const clients: IORedis[] = [];
  try {
    for (const e of endpoints) clients.push(await countedConnection(e.redisUrl));
  } catch (error) {
    await Promise.allSettled(clients.map((c) => c.quit()));
    throw error;
  }
  return clients;
}
