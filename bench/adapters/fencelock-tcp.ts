import { createLocks } from "../../src/index.ts";
import { LockTimeoutError } from "../../src/core/errors.ts";
import type { Lease } from "../../src/lock/lease.ts";
import { fromIoredis } from "../../src/ioredis.ts";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

/**
 * fencelock over TCP: an ioredis connection of its own per client through fromIoredis, with
 * default options (leaseMs 10 s, waitMs 5 s, push wake-ups on the adapter's one subscriber
 * connection, opened on the first wait and closed 2 s after the last).
 */
export function fencelockTcpLibrary(endpoint: Endpoint): Library {
  return {
    id: "fencelock-tcp",
    label: "fencelock (TCP, ioredis)",
    transport: "tcp",
    settings: "createLocks({ redis: fromIoredis(ioredis), prefix }) with defaults (leaseMs 10 s, waitMs 5 s, push wake-ups over the " +
      "adapter's one shared SUBSCRIBE connection per client); acquire(name) + lease.release(); a LockTimeoutError after 5 s " +
      "counts as a retry window run out and acquire is called again",
    connect: () => connectFencelockTcp(endpoint),
  };
}

async function connectFencelockTcp(endpoint: Endpoint): Promise<LockAdapter<Lease>> {
  const client = await countedConnection(endpoint.redisUrl);
  const locks = createLocks({ redis: fromIoredis(client), prefix: "bench-tcp" });
  const adapter = {
    name: "fencelock (TCP)",
    exhausted: 0,
    acquire: (name: string, signal?: AbortSignal) =>
      untilAcquired(
        () => locks.acquire(name, { signal }).catch(timeoutAsUndefined),
        () => (adapter.exhausted += 1),
        signal,
      ),
    release: async (lease: Lease) => {
      await lease.release();
    },
    heartbeat: async (lease: Lease) => {
      await lease.heartbeat();
    },
    close: async () => {
      await client.quit();
    },
  };
  return adapter;
}

function timeoutAsUndefined(error: unknown): undefined {
  if (error instanceof LockTimeoutError) return undefined;
  throw error;
}

/**
 * Puts leave.lua in Redis' script cache with one wait that times out, its connection left open
 * until the leave has landed. The bench closes each client's connection as soon as its run ends,
 * and the first leave of a fresh Redis is an EVALSHA that answers NOSCRIPT: its EVAL fallback then
 * meets a closed connection, and a hold release.lua had handed the departed waiter stays for a
 * whole lease (10 s), stalling the next runs on that name (seen: 2 of 5 rounds with no section).
 * An application that closes its connection right after aborting its first wait would see the same.
 */
export async function loadLeaveScript(endpoint: Endpoint): Promise<void> {
  const [a, b] = [await countedConnection(endpoint.redisUrl), await countedConnection(endpoint.redisUrl)];
  try {
    const holder = await createLocks({ redis: fromIoredis(a), prefix: "bench-tcp" }).acquire("tcp:load-leave");
    await createLocks({ redis: fromIoredis(b), prefix: "bench-tcp" }).acquire("tcp:load-leave", { waitMs: 50 }).then(
      () => Promise.reject(new Error("loadLeaveScript: the lock was not busy")),
      (error: unknown) => (error instanceof LockTimeoutError ? undefined : Promise.reject(error)),
    );
    // The leave runs in the background: EVALSHA, NOSCRIPT, then EVAL.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await holder.release();
  } finally {
    await Promise.allSettled([a.quit(), b.quit()]);
  }
}
