// Subscriber connections for the node-redis adapter: a duplicate of a standalone client, or the
// pub/sub connections a cluster keeps; each tells the shared subscriber when messages may be lost.
import type { MessageListener, NodeRedisClient, NodeRedisCluster } from "./node-redis.ts";
import { shardedRefused } from "./options.ts";
import { CONFIRM_MS, type SubscriberConnection } from "./shared-subscriber.ts";

/**
 * Standalone: node-redis needs a connection of its own to subscribe on, which reconnects and
 * subscribes again by itself; every drop is still reported, as messages may have been lost.
 */
export function duplicateConnection(redis: NodeRedisClient): SubscriberConnection {
  let deliver: (channel: string, message: string) => void = () => {};
  let drop: (reason: string) => void = () => {};
  const listener: MessageListener = (message, channel) => deliver(String(channel), String(message));
  // The channels the current connection carries.
  const channels = new Set<string>();
  let subscriber = open();
  let closed = false;

  function open() {
    const opened = redis.duplicate();
    const dropped = (reason: string) => opened === subscriber && drop(reason);
    // An "error" event that nobody listens to is thrown, and would end the program.
    opened.on("error", (error: unknown) => dropped(String(error)));
    opened.on("reconnecting", () => dropped("reconnecting"));
    opened.on("end", () => dropped("closed"));
    // Failures reach the listeners above as "error" events, and pending subscriptions reject.
    opened.connect().catch(() => undefined);
    return opened;
  }

  // node-redis confirms a channel it already has without asking the server, so a fresh stream on it
  // (a lock set opens one every minute) proves nothing: a PING must come back, or a new connection takes over.
  function stillAnswers(): Promise<unknown> {
    const asked = subscriber;
    return withinConfirmMs(asked.ping(), "PING").catch((error: unknown) => {
      if (closed || asked !== subscriber) throw error;
      channels.clear();
      subscriber = open();
      asked.destroy();
      drop(error instanceof Error ? error.message : String(error));
      throw error;
    });
  }

  return {
    subscribe: (channel) => (channels.has(channel) ? stillAnswers() : subscriber.subscribe(channel, listener).then(() => channels.add(channel))),
    unsubscribe: (channel) => (channels.delete(channel), subscriber.unsubscribe(channel, listener)),
    onMessage: (next) => void (deliver = next),
    onDrop: (next) => void (drop = next),
    close: () => ((closed = true), subscriber.destroy()),
  };
}

/** How often a cluster's UNSUBSCRIBE is tried: a failover takes seconds (node timeout, then the election). */
const UNSUBSCRIBE_TRIES = 30;

/** A pause that keeps no process alive. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** `reply`, or a rejection once CONFIRM_MS have passed without one. */
function withinConfirmMs(reply: Promise<unknown>, command: string): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to ${command} within ${CONFIRM_MS} ms`)), CONFIRM_MS);
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}

/**
 * Cluster: node-redis keeps the pub/sub connections (one for SUBSCRIBE, one per master for SSUBSCRIBE)
 * and follows a channel's slot to its new master, silently. Its events do not say whether a failed
 * node connection was a pub/sub one, so any counts as a drop.
 */
export function clusterConnection(cluster: NodeRedisCluster, sharded: boolean): SubscriberConnection {
  const channels = new Set<string>();
  let deliver: (channel: string, message: string) => void = () => {};
  let drop: (reason: string) => void = () => {};
  const listener: MessageListener = (message, channel) => deliver(String(channel), String(message));
  // An UNSUBSCRIBE that fails as its node goes down leaves the listener with node-redis, which then
  // subscribes it again on the new master, for good: tried again each second until it takes.
  const unsubscribe = (channel: string, tries = UNSUBSCRIBE_TRIES): Promise<unknown> => {
    channels.delete(channel);
    const sent = sharded ? cluster.sUnsubscribe(channel, listener) : cluster.unsubscribe(channel, listener);
    return sent.catch((error: unknown) => (tries > 1 ? pause(1_000).then(() => unsubscribe(channel, tries - 1)) : Promise.reject(error)));
  };
  const events: [string, (...args: unknown[]) => void][] = [
    ["node-error", (error: unknown) => drop(`a cluster node's connection failed: ${String(error)}`)],
    ["node-reconnecting", () => drop("reconnecting to a cluster node")],
    ["sharded-channel-moved-error", (error: unknown) => drop(`a channel's slot moved, and subscribing on its new node failed: ${String(error)}`)],
  ];
  for (const [event, handler] of events) cluster.on(event, handler);
  return {
    subscribe: (channel) => (
      channels.add(channel),
      sharded ? cluster.sSubscribe(channel, listener).catch((error: unknown) => Promise.reject(shardedRefused(error, "fromNodeRedis"))) : cluster.subscribe(channel, listener)
    ),
    unsubscribe,
    onMessage: (next) => void (deliver = next),
    onDrop: (next) => void (drop = next),
    close() {
      for (const [event, handler] of events) cluster.off(event, handler);
      for (const channel of channels) unsubscribe(channel).catch(() => undefined);
    },
  };
}
