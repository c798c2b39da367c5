import type { RedisClient, WakeSubscriber } from "./redis.ts";
import { retryDelayMs, sleep } from "./wait.ts";

/** How acquire() spends the time between two attempts on a busy lock. */
export interface Waiter {
  pause(tries: number, busyForMs: number, budgetMs: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The default: server-hinted, jittered backoff. */
export const pollWaiter: Waiter = {
  pause: (tries, busyForMs, budgetMs, signal) => sleep(retryDelayMs(tries, busyForMs, budgetMs), signal),
  close: async () => undefined,
};

/** The channel a lock's final release publishes on; base64url keeps it safe in a URL path. */
export function wakeChannel(prefix: string, name: string): string {
  const bytes = new TextEncoder().encode(name);
  const base64 = btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
  return `${prefix}:wake:${base64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/**
 * Push wake-ups over SUBSCRIBE (server-sent events on Upstash). The stream opens after the
 * first busy attempt and the next attempt waits for its confirmation, so a release between
 * the two is caught by that attempt and every later one arrives as a message. Without a
 * message the waiter retries when the holder's TTL runs out, so a lost message, or an
 * expiry (which publishes nothing), costs one TTL, never the whole wait.
 */
export function pushWaiter(redis: RedisClient, channel: string): Waiter {
  let stream: WakeStream | undefined;
  return {
    async pause(tries, busyForMs, budgetMs, signal) {
      if (!stream) {
        stream = openStream(redis, channel);
        if (await stream.ready(budgetMs, signal)) return;
      }
      if (!stream.live) return pollWaiter.pause(tries, busyForMs, budgetMs, signal);
      await stream.message(Math.min(busyForMs + 1, budgetMs), signal);
    },
    close: async () => stream?.close(),
  };
}

interface WakeStream {
  /** True once subscribed; false if the stream failed or did not confirm within `ms`. */
  ready(ms: number, signal?: AbortSignal): Promise<boolean>;
  readonly live: boolean;
  /** Resolves on the next message (or one that came since the last call), or after `ms`. */
  message(ms: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

function openStream(redis: RedisClient, channel: string): WakeStream {
  let live = false;
  let failed = false;
  let pending = false;
  const wakers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of wakers) wake();
  };
  let subscriber: WakeSubscriber | undefined;
  try {
    subscriber = redis.subscribe?.(channel);
  } catch {
    failed = true;
  }
  subscriber?.on("subscribe", () => ((live = true), wakeAll()));
  subscriber?.on("error", () => ((live = false), (failed = true), wakeAll()));
  subscriber?.on("message", () => ((pending = true), wakeAll()));
  if (!subscriber) failed = true;

  // Waits until `done()` holds, a waker fires and it holds, `ms` pass, or the signal aborts.
  const until = (done: () => boolean, ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (done()) return resolve();
      const controller = new AbortController();
      const finish = () => (wakers.delete(check), controller.abort(), resolve());
      const check = () => done() && finish();
      wakers.add(check);
      sleep(ms, signal ? AbortSignal.any([signal, controller.signal]) : controller.signal).then(finish, (error: unknown) => {
        wakers.delete(check);
        if (signal?.aborted) reject(error);
      });
    });

  return {
    get live() {
      return live;
    },
    async ready(ms, signal) {
      await until(() => live || failed, ms, signal);
      return live;
    },
    async message(ms, signal) {
      await until(() => pending || failed, ms, signal);
      pending = false;
    },
    close: async () => subscriber?.unsubscribe(),
  };
}
