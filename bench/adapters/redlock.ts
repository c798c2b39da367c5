import Redlock, { ExecutionError, type Lock } from "redlock";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

const DURATION_MS = 10_000;

/** redlock 5.0.0-beta.2 over TCP (ioredis) to the same Redis, with its default retry settings. */
export function redlockLibrary(endpoint: Endpoint): Library {
  return {
    id: "redlock",
    label: "redlock (TCP)",
    transport: "tcp",
    settings: "new Redlock([ioredis]) with defaults: retryCount 10, retryDelay 200 ms, retryJitter ±100 ms, " +
      `driftFactor 0.01; acquire([key], ${DURATION_MS}); when its 11 attempts run out (ExecutionError) acquire is called again`,
    connect: () => connectRedlock(endpoint),
  };
}

async function connectRedlock(endpoint: Endpoint): Promise<LockAdapter<Lock>> {
  const client = await countedConnection(endpoint.redisUrl);
  const redlock = new Redlock([client]);
  const attempt = async (key: string): Promise<Lock | undefined> => {
    try {
      return await redlock.acquire([key], DURATION_MS);
    } catch (error) {
      if (error instanceof ExecutionError) return undefined;
      throw error;
    }
  };
  const adapter = {
    name: "redlock",
    exhausted: 0,
    acquire: (name: string, signal?: AbortSignal) =>
      untilAcquired(() => attempt(`rl:${name}`), () => (adapter.exhausted += 1), signal),
    release: async (lock: Lock) => {
      await lock.release();
    },
    heartbeat: async (lock: Lock) => {
      await lock.extend(DURATION_MS);
    },
    close: async () => {
      await client.quit();
    },
  };
  return adapter;
}
