import { Lock } from "@upstash/lock";
import { Redis } from "@upstash/redis";
import type { Endpoint } from "../harness/server.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

/** Its documented default is 3 attempts 100 ms apart; raised so a waiter keeps trying. */
const ATTEMPTS = 1_000_000;
const DELAY_MS = 100;

/** @upstash/lock 0.2.1 on the same endpoint: one Lock per acquire (it keeps the owner UUID). */
export function upstashLockLibrary(endpoint: Endpoint): Library {
  return {
    id: "upstash-lock",
    label: "@upstash/lock",
    transport: "http",
    settings: `new Lock({ id, redis, retry: { attempts: ${ATTEMPTS.toLocaleString("en")}, delay: ${DELAY_MS} } }): ` +
      "lease 10 s and delay 100 ms are its defaults; attempts raised from the default 3 so a waiter keeps trying",
    connect: async () => connectUpstashLock(endpoint),
  };
}

function connectUpstashLock(endpoint: Endpoint): LockAdapter<Lock> {
  const redis = new Redis({ url: endpoint.url, token: endpoint.token });
  const adapter = {
    name: "@upstash/lock",
    exhausted: 0,
    acquire: (name: string) =>
      untilAcquired(
        async () => {
          const lock = new Lock({ id: `ul:${name}`, redis, retry: { attempts: ATTEMPTS, delay: DELAY_MS } });
          return (await lock.acquire()) ? lock : undefined;
        },
        () => (adapter.exhausted += 1),
      ),
    release: async (lock: Lock) => {
      await lock.release();
    },
    heartbeat: async (lock: Lock) => {
      await lock.extend(1_000);
    },
    close: async () => undefined,
  };
  return adapter;
}
