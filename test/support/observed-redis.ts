import type { RedisClient } from "../../src/index.ts";
import type { WakeSubscriber } from "../../src/core/client.ts";
import { sleep } from "../../src/waiting/backoff.ts";
import { upstash } from "./upstash.ts";

export interface Tweaks {
  /** Hold back the subscription's confirmation this long. */
  confirmAfterMs?: number;
  /** Drop every message, as a lost stream would. */
  dropMessages?: boolean;
  /** Never confirm the subscription, as a proxy that buffers the event stream would. */
  neverConfirm?: boolean;
}

/** The real client, with its subscription stream observed and optionally disturbed. */
export function observedRedis(tweaks: Tweaks = {}) {
  const real = upstash();
  const seen = { subscribed: 0, unsubscribed: 0 };
  /** Channels subscribed to, and the events the waiter was given. */
  const heard = { channels: [] as string[], confirmations: 0, messages: 0 };
  const client: RedisClient = {
    evalsha: (sha, keys, args) => real.evalsha(sha, keys, args),
    eval: (script, keys, args) => real.eval(script, keys, args),
    subscribe(channel): WakeSubscriber {
      const subscriber = real.subscribe(channel);
      seen.subscribed++;
      heard.channels.push(channel);
      return {
        on(type, listener) {
          if (type === "message" && tweaks.dropMessages) return;
          if (type === "subscribe" && tweaks.neverConfirm) return;
          const counted = (event: unknown) => {
            if (type === "subscribe") heard.confirmations++;
            if (type === "message") heard.messages++;
            listener(event);
          };
          const delayed = (event: unknown) => void sleep(tweaks.confirmAfterMs ?? 0).then(() => counted(event));
          subscriber.on(type, type === "subscribe" && tweaks.confirmAfterMs ? delayed : counted);
        },
        async unsubscribe() {
          seen.unsubscribed++;
          await subscriber.unsubscribe();
        },
      };
    },
  };
  return { client, seen, heard };
}
