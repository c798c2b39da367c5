// The two ways to wait between attempts: polling with backoff, or push wake-ups over SUBSCRIBE.
import { sha1Hex } from "../core/keys.ts";
import type { RedisClient, WakeSubscriber } from "../core/client.ts";
import type { Busy } from "../core/backend.ts";
import { MIN_RETRY_MS, QUEUE_ALIVE_MS, retryDelayMs, sleep } from "./backoff.ts";

/** How acquire() spends the time between two attempts on a busy lock. */
export interface Waiter {
  /** Resolves with a fence when a release handed the lock to this waiter while it slept. */
  pause(tries: number, busy: Busy, budgetMs: number, signal?: AbortSignal): Promise<number | void>;
  /** Absent when there is nothing to close. */
  close?(): Promise<void>;
}

/** The default: server-hinted, jittered backoff. */
export const pollWaiter: Waiter = {
  pause: (tries, busy, budgetMs, signal) => sleep(retryDelayMs(tries, busy, budgetMs), signal),
};

/**
 * Push wake-ups over SUBSCRIBE (server-sent events on Upstash). The stream opens after the first
 * busy attempt, and the next attempt waits for its confirmation, so a release between the two is
 * caught by that attempt and every later one comes as a message. The release takes the lock for
 * the first waiter in line and publishes the fence on that waiter's own channel: no herd, and no
 * further request. Without a message a waiter looks 50 ms after the TTL, and at least every second
 * to keep its place. A stream can die without a word (fetch drops a body idle for 5 minutes, and
 * Upstash sends no keep-alives), so a fresh one opens every minute.
 */
export function pushWaiter(redis: RedisClient, lockKey: string, ticket: string, owner: string): Required<Waiter> {
  let stream: WakeStream | undefined;
  let openedAt = 0;
  return {
    async pause(tries, busy, budgetMs, signal) {
      const refreshMs = QUEUE_ALIVE_MS / 2;
      // 50 ms past the TTL, as retryDelayMs. Promised to an earlier waiter (0): until a message or
      // the refresh. This call's hold came too late (-1): no message will come, so in 49 ms.
      const waitMs = Math.min(busy.busyForMs ? busy.busyForMs + MIN_RETRY_MS : refreshMs, refreshMs, budgetMs);
      if (stream && performance.now() - openedAt > 60_000) {
        stream.close().catch(() => undefined);
        stream = undefined;
      }
      if (!stream) {
        openedAt = performance.now();
        // The heir's own channel, as release.lua publishes on it: hex and dots, safe in a URL path
        // and in the comma-separated lines of the event stream.
        stream = openStream(redis, `${await sha1Hex(lockKey)}.${ticket}`, owner);
        // The attempt after the confirmation catches a release made before it. Without one in
        // time (a proxy may buffer the stream) it attempts anyway, and polls until one comes.
        if (await stream.ready(waitMs, signal)) return;
      }
      if (!stream.live) return pollWaiter.pause(tries, busy, budgetMs, signal);
      return stream.message(waitMs, signal);
    },
    // A macrotask later, after the caller has its lease: a stream's teardown is half a millisecond
    // of work that would otherwise delay every handover.
    close: () => sleep(0).then(() => stream?.close()),
  };
}

interface WakeStream {
  /** Waits up to `ms` for the confirmation; false if the stream failed instead. */
  ready(ms: number, signal?: AbortSignal): Promise<boolean>;
  readonly live: boolean;
  /** Resolves with the fence of the next handover to this waiter (or one since the last call), or after `ms`. */
  message(ms: number, signal?: AbortSignal): Promise<number | undefined>;
  close(): Promise<void>;
}

function openStream(redis: RedisClient, channel: string, owner: string): WakeStream {
  let live = false;
  let failed = false;
  let granted: number | undefined;
  const wakers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of wakers) wake();
  };
  const subscriber = subscribeTo(redis, channel);
  if (subscriber) {
    subscriber.on("subscribe", () => ((live = true), wakeAll()));
    subscriber.on("error", () => ((live = false), (failed = true), wakeAll()));
    subscriber.on("message", async (event) => {
      const fence = await handoverFence(event, owner);
      if (fence === undefined) return;
      granted = fence;
      wakeAll();
    });
  } else {
    failed = true;
  }

  // Waits until `done()` holds, `ms` pass, or the signal aborts; a waker cuts a sleep short to look.
  const until = async (done: () => boolean, ms: number, signal?: AbortSignal) => {
    const deadline = performance.now() + ms;
    while (!done() && performance.now() < deadline) await sleep(deadline - performance.now(), signal, wakers);
  };

  return {
    get live() {
      return live;
    },
    async ready(ms, signal) {
      await until(() => live || failed, ms, signal);
      return !failed;
    },
    async message(ms, signal) {
      await until(() => granted !== undefined || failed, ms, signal);
      const fence = granted;
      granted = undefined;
      return fence;
    },
    close: async () => subscriber?.unsubscribe(),
  };
}

/** The client's subscriber for `channel`; undefined where it cannot subscribe, or throws trying. */
function subscribeTo(redis: RedisClient, channel: string): WakeSubscriber | undefined {
  try {
    return redis.subscribe?.(channel);
  } catch {
    return undefined;
  }
}

/**
 * The fence of a handover message, 'fence:digest', if release.lua signed it for `owner`: only it
 * and this waiter know the owner token, so one who may publish but not read keys cannot forge it.
 */
async function handoverFence(event: unknown, owner: string): Promise<number | undefined> {
  // Any event reads safely so: a field of a primitive is undefined.
  const message = String((event as { message?: unknown } | null | undefined)?.message);
  const [, fence, digest] = /^([1-9]\d{0,15}):([0-9a-f]{40})$/.exec(message) ?? [];
  if (!fence || !Number.isSafeInteger(+fence) || digest !== (await sha1Hex(`${fence}:${owner}`))) return undefined;
  return +fence;
}
