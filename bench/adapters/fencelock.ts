import { Redis } from "@upstash/redis";
import { createLocks, type AcquireOptions, type Locks } from "../../src/index.ts";
import { LockTimeoutError } from "../../src/core/errors.ts";
import type { Lease } from "../../src/lock/lease.ts";
import type { Endpoint } from "../harness/server.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

/** "default": no `wake` option given, so whatever fencelock waits with by default. */
export type Wake = "default" | "poll" | "push";

/** Longest single acquire() wait; a LockTimeoutError after it counts as an exhausted window. */
const WAIT_MS = 60_000;

const HOW: Record<Wake, string> = {
  default: "push wake-ups over one shared SUBSCRIBE stream per lock set when the client can subscribe, else poll",
  poll: "backoff 50, 100, 200 ... 800 ms with jitter, but at most 50 ms per place ahead in line, and 50 ms for the first two " +
    "(the second is first after the next handover)",
  push: "push wake-ups asked for explicitly",
};

/** fencelock over @upstash/redis: acquire (waitMs 60 s, with `wake` as given) + release. */
export function fencelockLibrary(endpoint: Endpoint, wake: Wake): Library {
  const option = wake === "default" ? "" : `, wake: "${wake}"`;
  return {
    id: `fencelock-${wake}`,
    label: `fencelock (${wake})`,
    transport: "http",
    settings: `createLocks({ redis, prefix: "bench" }) with defaults (leaseMs 10 s), one per client; acquire(name, { waitMs: 60_000${option} }); ${HOW[wake]}`,
    connect: async () => connectFencelock(endpoint, wake),
  };
}

function connectFencelock(endpoint: Endpoint, wake: Wake): LockAdapter<Lease> {
  const locks = createLocks({ redis: new Redis({ url: endpoint.url, token: endpoint.token }), prefix: "bench" });
  const options = wake === "default" ? { waitMs: WAIT_MS } : { waitMs: WAIT_MS, wake };
  return fencelockAdapter(`fencelock (${wake})`, locks, options, async () => undefined);
}

/** A lock set as the bench drives it, over any transport: a LockTimeoutError counts as a window run out. */
export function fencelockAdapter(name: string, locks: Locks, options: AcquireOptions, close: () => Promise<void>): LockAdapter<Lease> {
  const adapter = {
    name,
    exhausted: 0,
    acquire: (lock: string, signal?: AbortSignal) =>
      untilAcquired(
        () => locks.acquire(lock, { ...options, signal }).catch(timeoutAsUndefined),
        () => (adapter.exhausted += 1),
        signal,
      ),
    release: async (lease: Lease) => {
      await lease.release();
    },
    heartbeat: async (lease: Lease) => {
      await lease.heartbeat();
    },
    close,
  };
  return adapter;
}

function timeoutAsUndefined(error: unknown): undefined {
  if (error instanceof LockTimeoutError) return undefined;
  throw error;
}
