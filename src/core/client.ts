// What fencelock needs of a Redis client: the contract every client, adapter and mock meets.

/**
 * The two calls fencelock needs from a Redis client. `new Redis(...)` from
 * `@upstash/redis` fits it as is; so does any client with the same two methods, if every call settles.
 */
export interface RedisClient {
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** For push wake-ups (without it, waits poll): SUBSCRIBE as @upstash/redis serves it, over server-sent events. */
  subscribe?(channel: string): WakeSubscriber;
  /**
   * Redis Cluster (Redis 7+): SSUBSCRIBE to a shard channel. With it, each lock's wake-ups travel
   * on a channel in that lock's slot (SPUBLISH), instead of one channel that every node relays.
   */
  ssubscribe?(channel: string): WakeSubscriber;
}

/** The part of @upstash/redis's Subscriber that push wake-ups listen to. */
export interface WakeSubscriber {
  on(type: "subscribe" | "message" | "error", listener: (event: unknown) => void): void;
  unsubscribe(): Promise<void>;
}
