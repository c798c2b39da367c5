// Subscriber connections for the ioredis adapter: one per node a channel is routed to, each made
// with duplicate() from the user's client, given up on any failure and made afresh on next use.
import type { Cluster, Redis, RedisOptions } from "ioredis";
import { CONFIRM_MS, type SubscriberConnection } from "./shared-subscriber.ts";
import { shardedRefused } from "./options.ts";
import { slotOf } from "./slot.ts";

/** Classic pub/sub (SUBSCRIBE: every node hears every PUBLISH) or sharded (SSUBSCRIBE at the channel's slot). */
export type PubSub = "classic" | "sharded";

/** Where a channel's subscription goes: a node, by a key that names its connection, and how to connect to it. */
export interface Router {
  route(channel: string): Promise<{ readonly node: string; readonly connect: () => Redis }>;
  /** Learns the cluster's slots afresh, after a node answered MOVED. */
  refresh(): Promise<void>;
}

/** Sharded: how often a channel whose slot moved is routed afresh before its subscribe fails. */
const MAX_MOVED = 3;

// Whatever the user's client does: no reconnect (a fresh connection is routed anew), no key
// prefix (channel names are exact), commands queued while it connects, and no ready check: ioredis
// sends a subscribe before it, and then fails the check's INFO as a command in subscriber mode.
const SUBSCRIBER: Partial<RedisOptions> = {
  lazyConnect: false, enableOfflineQueue: true, retryStrategy: () => null, autoResubscribe: false,
  keyPrefix: undefined, readOnly: false, enableAutoPipelining: false, enableReadyCheck: false,
};

/** A standalone or Sentinel client: every channel on one connection like the client's own. */
export function serverRouter(client: Redis): Router {
  const target = { node: "server", connect: () => client.duplicate(SUBSCRIBER) };
  return { route: () => Promise.resolve(target), refresh: () => Promise.resolve() };
}

/** A Cluster: classic channels all on one connection to a master, sharded ones at their slot's master. */
export function clusterRouter(client: Cluster, pubsub: PubSub): Router {
  return {
    async route(channel) {
      const slot = pubsub === "sharded" ? slotOf(channel) : 0;
      // Not connected yet (lazyConnect): a command connects it, and answers once it knows the slots.
      if (!client.slots[slot]?.[0]) await client.ping();
      const key = client.slots[slot]?.[0];
      const node = client.nodes("master").find(({ options }) => `${options.host}:${options.port}` === key);
      if (!node) throw new Error(`no master of slot ${slot} is known to the Cluster client`);
      return { node: pubsub === "sharded" ? String(key) : "classic", connect: () => node.duplicate(SUBSCRIBER) };
    },
    refresh: () => new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve())),
  };
}

interface Node {
  readonly redis: Redis;
  /** Subscribes waiting on this node, told when it answers MOVED: ioredis then never settles the command. */
  readonly moved: Set<() => void>;
}

/** The connections of one shared subscriber (see shared-subscriber.ts): opened per node as channels need them. */
export class SubscriberGroup implements SubscriberConnection {
  readonly #router: Router;
  readonly #sharded: boolean;
  readonly #nodes = new Map<string, Node>();
  readonly #channels = new Map<string, Node>();
  readonly #messageListeners: ((channel: string, message: string) => void)[] = [];
  readonly #dropListeners: ((reason: string, channels: readonly string[]) => void)[] = [];
  #closed = false;

  constructor(router: Router, pubsub: PubSub) {
    this.#router = router;
    this.#sharded = pubsub === "sharded";
  }

  async subscribe(channel: string): Promise<void> {
    for (let tries = 1; ; tries++) {
      const target = await this.#router.route(channel);
      if (this.#closed) throw new Error("the subscriber connection was closed");
      const node = this.#connection(target.node, target.connect);
      if (await this.#confirmed(node, channel)) return void this.#channels.set(channel, node);
      if (tries === MAX_MOVED) throw new Error(`SSUBSCRIBE ${channel} was answered MOVED ${MAX_MOVED} times`);
      await this.#router.refresh();
    }
  }

  unsubscribe(channel: string): Promise<unknown> {
    const node = this.#channels.get(channel);
    this.#channels.delete(channel);
    if (!node) return Promise.resolve();
    return this.#sharded ? node.redis.sunsubscribe(channel) : node.redis.unsubscribe(channel);
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.#messageListeners.push(listener);
  }

  onDrop(listener: (reason: string, channels: readonly string[]) => void): void {
    this.#dropListeners.push(listener);
  }

  close(): void {
    this.#closed = true;
    this.#nodes.forEach((node) => node.redis.disconnect());
    this.#nodes.clear();
    this.#channels.clear();
  }

  #connection(key: string, connect: () => Redis): Node {
    const open = this.#nodes.get(key);
    if (open) return open;
    const node: Node = { redis: connect(), moved: new Set() };
    let reason: string | undefined;
    node.redis.on(this.#sharded ? "smessage" : "message", (channel: string, message: string) =>
      this.#messageListeners.forEach((listener) => listener(channel, message)));
    node.redis.on("moved", () => node.moved.forEach((retry) => retry()));
    // Also a reply ioredis could not match, as the SUNSUBSCRIBE a node sends when a slot leaves it: state unknown, so start afresh.
    node.redis.on("error", (error: Error) => reason === undefined && ((reason = error.message), node.redis.disconnect()));
    node.redis.once("close", () => {
      if (this.#nodes.get(key) === node) this.#nodes.delete(key);
      // Only this node's channels lost messages: streams on other nodes' connections go on.
      const lost = [...this.#channels].filter(([, at]) => at === node).map(([channel]) => channel);
      lost.forEach((channel) => this.#channels.delete(channel));
      if (!this.#closed) this.#dropListeners.forEach((listener) => listener(reason ?? "connection closed", lost));
    });
    this.#nodes.set(key, node);
    return node;
  }

  /** True once the node confirmed, false when it answered MOVED. */
  #confirmed(node: Node, channel: string): Promise<boolean> {
    const command = this.#sharded ? "SSUBSCRIBE" : "SUBSCRIBE";
    return new Promise<boolean>((resolve, reject) => {
      const settle = (outcome: () => void) => (clearTimeout(timer), node.moved.delete(moved), outcome());
      const moved = () => settle(() => resolve(false));
      // A connection that does not answer is given up, so that the next subscribe gets a fresh one.
      const timer = setTimeout(() => settle(() => {
        node.redis.disconnect();
        reject(new Error(`no answer to ${command} within ${CONFIRM_MS} ms`));
      }), CONFIRM_MS);
      node.moved.add(moved);
      (this.#sharded ? node.redis.ssubscribe(channel) : node.redis.subscribe(channel)).then(
        () => settle(() => resolve(true)),
        (error: unknown) => settle(() => reject(this.#sharded ? shardedRefused(error, "fromIoredis") : error)),
      );
    });
  }
}
