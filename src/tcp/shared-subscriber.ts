// Push wake-ups over TCP: every stream a client's lock sets open is one channel on a single
// subscriber connection, opened on first use and closed when the last stream closes.
import type { WakeSubscriber } from "../core/client.ts";

/** What the shared subscriber needs of a client's subscriber connection. */
export interface SubscriberConnection {
  /** Resolves once the server confirmed the subscription. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  onMessage(listener: (channel: string, message: string) => void): void;
  /**
   * A connection dropped: messages may have been lost on `channels` (every channel when not
   * given), whatever it subscribes to again.
   */
  onDrop(listener: (reason: string, channels?: readonly string[]) => void): void;
  close(): void;
}

/** A subscribe that neither confirms nor fails in this time fails: its lock set then polls instead of waiting on it. */
export const CONFIRM_MS = 10_000;

type Listener = (event: unknown) => void;

interface Stream {
  readonly listeners: Map<string, Listener[]>;
  emit(type: string, event: unknown): void;
}

type Subscribe = (channel: string) => WakeSubscriber;

/** Per client and kind of pub/sub, so that every adapter made of one client shares its subscriber connections. */
const subscribers = new WeakMap<object, Map<string, Subscribe>>();

/** The subscribe() of `client` for one kind of pub/sub: made on the first call, the same one after. */
export function subscriberOf(client: object, kind: string, connect: () => SubscriberConnection): Subscribe {
  const kinds = subscribers.get(client) ?? new Map<string, Subscribe>();
  subscribers.set(client, kinds);
  const subscribe = kinds.get(kind) ?? sharedSubscriber(connect);
  kinds.set(kind, subscribe);
  return subscribe;
}

/** A client's subscribe(): streams on one connection from `connect`, opened when the first is needed. */
export function sharedSubscriber(connect: () => SubscriberConnection): (channel: string) => WakeSubscriber {
  const streams = new Map<string, Set<Stream>>();
  let connection: SubscriberConnection | undefined;

  function connected(): SubscriberConnection {
    if (connection) return connection;
    const opened = connect();
    opened.onMessage((channel, message) => streams.get(channel)?.forEach((stream) => stream.emit("message", { channel, message })));
    // Each stream that may have missed a message reports it, and its lock set opens another.
    opened.onDrop((reason, channels) => {
      if (opened !== connection) return;
      const error = new Error(`subscriber connection dropped: ${reason}`);
      streams.forEach((set, channel) => (!channels || channels.includes(channel)) && set.forEach((stream) => stream.emit("error", error)));
    });
    return (connection = opened);
  }

  function closeStream(channel: string, stream: Stream): Promise<void> {
    const set = streams.get(channel);
    if (!set?.delete(stream) || set.size > 0) return Promise.resolve();
    streams.delete(channel);
    const open = connection;
    if (!open) return Promise.resolve();
    if (streams.size > 0) return open.unsubscribe(channel).then(() => undefined, () => undefined);
    // The last stream gone, the connection goes too, so that it keeps no Node process alive.
    connection = undefined;
    open.close();
    return Promise.resolve();
  }

  return function subscribe(channel: string): WakeSubscriber {
    const listeners = new Map<string, Listener[]>();
    const stream: Stream = { listeners, emit: (type, event) => listeners.get(type)?.forEach((listener) => listener(event)) };
    const set = streams.get(channel) ?? new Set<Stream>();
    streams.set(channel, set.add(stream));
    // Confirmed per stream, after the caller has added its listeners.
    const opened = connected();
    opened.subscribe(channel).then(
      () => {
        if (set.has(stream)) return stream.emit("subscribe", { channel });
        // Every stream on the channel closed while it was subscribing (a slow node): it goes now.
        if (!streams.has(channel) && connection === opened) opened.unsubscribe(channel).catch(() => undefined);
      },
      (error: unknown) => set.has(stream) && stream.emit("error", withAclHint(error)),
    );
    return {
      on: (type, listener) => void listeners.set(type, [...(listeners.get(type) ?? []), listener]),
      unsubscribe: () => closeStream(channel, stream),
    };
  };
}

/** Redis 7 gives a new ACL user no channels, and @read/@write hold no pub/sub: a refused SUBSCRIBE says what to grant. */
function withAclHint(error: unknown): unknown {
  const hint = "grant this Redis user the commands and channels push wake-ups use (ACL rules +subscribe +publish &fencelock.*; on a Cluster +ssubscribe +spublish)";
  return /NOPERM/.test(String(error)) ? new Error(`${String(error)}; ${hint}`) : error;
}
