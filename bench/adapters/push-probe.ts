import { Redis } from "@upstash/redis";
import { createLocks } from "../../src/index.ts";
import type { Endpoint } from "../harness/server.ts";

export type PushAvailability = { available: true } | { available: false; reason: string };

const PROBE_TIMEOUT_MS = 3_000;

/**
 * Whether `wake: "push"` can be measured: fencelock must accept the option, and the local
 * server must serve /subscribe (SSE) and deliver a PUBLISH on it. Without both, a push row
 * would silently measure the polling fallback, so it is skipped with the reason instead.
 */
export async function probePush(endpoint: Endpoint): Promise<PushAvailability> {
  try {
    const redis = new Redis({ url: endpoint.url, token: endpoint.token });
    const locks = createLocks({ redis, prefix: "bench-probe" });
    const lease = await locks.acquire("probe", { waitMs: 0, wake: "push" });
    await lease.release();
    await roundTrip(redis, `bench-probe:${crypto.randomUUID()}`);
    return { available: true };
  } catch (error) {
    return { available: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Subscribes, waits for the confirmation, publishes once and waits for the message. */
async function roundTrip(redis: Redis, channel: string): Promise<void> {
  const subscriber = redis.subscribe([channel]);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no SSE subscribe confirmation or message within 3 s")), PROBE_TIMEOUT_MS);
      const fail = (error: unknown) => {
        clearTimeout(timer);
        reject(new Error(`/subscribe failed: ${error instanceof Error ? error.message : String(error)}`));
      };
      subscriber.on("error", fail);
      subscriber.on("subscribe", () => void redis.publish(channel, "ping").catch(fail));
      subscriber.on("message", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    await subscriber.unsubscribe();
  }
}
