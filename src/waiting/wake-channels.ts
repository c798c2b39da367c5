// Which channel a lock's push waiters listen on: one per lock set, or on a Cluster one per lock.
import type { RedisClient, WakeSubscriber } from "../core/client.ts";
import { newToken } from "../core/keys.ts";
import { ON_WORKERS, wakeChannel, type WakeChannel } from "./wake-channel.ts";

/** The wake channel of the lock whose lock key is given. */
type ChannelFor = (lockKey: string) => WakeChannel;

/**
 * A lock set's wake channels. With `ssubscribe` (Redis Cluster), each lock waited on gets a shard
 * channel in its own slot, so a handover travels to one node's subscribers instead of every node;
 * otherwise one channel serves all the lock set's locks (on Workers, each wait). release.lua reads
 * which from the ticket.
 */
export function wakeChannels(redis: RedisClient, warn: (message: string) => void): ChannelFor {
  // Ids are drawn at the first wait: Workers refuse random values in global scope, where an app may
  // build its lock set.
  if (!redis.ssubscribe) {
    const channelAt = (address: string) => wakeChannel({ address, open: () => opened(() => redis.subscribe?.(`fencelock.${address}`), warn) }, warn);
    // On Workers each wait has a channel of its own: a stream another request opened ends with it.
    if (ON_WORKERS) return () => channelAt(newToken());
    let shared: WakeChannel | undefined;
    return () => (shared ??= channelAt(newToken()));
  }
  let id: string | undefined;
  const perLock = new Map<string, WakeChannel>();
  return (lockKey) => {
    let channel = perLock.get(lockKey);
    if (!channel) {
      id ??= newToken();
      // Named by the lock key from its hash tag on, as release.lua names it: in the lock's slot,
      // and the same under a key prefix the client adds (ioredis keyPrefix).
      const shard = `fencelock.${id}:${lockKey.slice(lockKey.indexOf("{"))}`;
      const open = () => opened(() => redis.ssubscribe?.(shard), warn);
      channel = wakeChannel({ address: `${id}.s`, open, onIdle: () => perLock.delete(lockKey) }, warn);
      perLock.set(lockKey, channel);
    }
    return channel;
  };
}

/** A stream from `subscribe`; undefined, said once, where the client cannot open one. */
function opened(subscribe: () => WakeSubscriber | undefined, warn: (message: string) => void): WakeSubscriber | undefined {
  try {
    const stream = subscribe();
    if (stream) return stream;
    warn("push wake-ups are unavailable: this Redis client has no subscribe(); waits poll. Pass wake: \"poll\" to say so");
  } catch (error) {
    warn(`push wake-ups are unavailable (subscribe() threw: ${String(error)}); waits poll`);
  }
  return undefined;
}
