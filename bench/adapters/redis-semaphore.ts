import { Mutex, TimeoutError } from "redis-semaphore";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

/** redis-semaphore 5.8.0 Mutex over TCP (ioredis) to the same Redis, with its default timeouts. */
export function redisSemaphoreLibrary(endpoint: Endpoint): Library {
  return {
    id: "redis-semaphore",
    label: "redis-semaphore Mutex (TCP)",
    transport: "tcp",
    settings: "new Mutex(ioredis, key) with defaults: lockTimeout 10 s, acquireTimeout 10 s, retryInterval 10 ms, " +
      "refreshInterval 8 s; after an acquire timeout acquire is called again",
    connect: () => connectSemaphore(endpoint),
  };
}

async function connectSemaphore(endpoint: Endpoint): Promise<LockAdapter<Mutex>> {
  const client = await countedConnection(endpoint.redisUrl);
  const attempt = async (key: string, signal?: AbortSignal): Promise<Mutex | undefined> => {
    const mutex = new Mutex(client, key);
    try {
      await mutex.acquire(signal);
      return mutex;
    } catch (error) {
      if (error instanceof TimeoutError) return undefined;
      throw error;
    }
  };
  const adapter = {
    name: "redis-semaphore",
    exhausted: 0,
    acquire: (name: string, signal?: AbortSignal) =>
      untilAcquired(() => attempt(`rs:${name}`, signal), () => (adapter.exhausted += 1), signal),
    release: async (mutex: Mutex) => {
      await mutex.release();
    },
    close: async () => {
      await client.quit();
    },
  };
  return adapter;
}
