import { Redis as IORedis } from "ioredis";
import { inject } from "vitest";
import { lockKeys } from "../lock-keys.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Dice } from "./dice.ts";
import type { History } from "./history.ts";
import type { ChaosPlan } from "./plan.ts";

/**
 * Every 0.2-1.5 s, deletes a lock (and half the time its fence counter) straight in Redis, as a
 * failover or restart losing them would, and notes the loss in the history until stopped.
 */
export function startNemesis(plan: ChaosPlan, dice: Dice, history: History): { stop(): Promise<void> } {
  const redis = new IORedis(inject("upstash").redisUrl, { maxRetriesPerRequest: 1 });
  const stopping = new AbortController();
  /** True after `ms`; false as soon as the nemesis is stopped. */
  const pause = (ms: number) => sleep(ms, stopping.signal).then(() => true, () => false);
  const deleting = (async () => {
    while (await pause(dice.int(200, 1_500))) {
      const name = dice.pick(plan.names);
      const keys = lockKeys(plan.prefix, name);
      const lost = dice.chance(0.5) ? [keys.lock, keys.fence] : [keys.lock];
      history.keysLost(name);
      await redis.del(...lost);
      history.record(`NEMESIS deleted ${lost.join(" ")}`);
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await deleting;
      redis.disconnect();
    },
  };
}
