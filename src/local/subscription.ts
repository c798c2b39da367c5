// /subscribe and /psubscribe: one subscription served as server-sent events on a connection of its own.
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import { HttpError, RedisUnavailableError } from "./errors.ts";
import { decodeSegment } from "./http-io.ts";
import type { ConnectionPool } from "./pool.ts";
import { isReplyError } from "./redis-client.ts";
import { unavailable } from "./redis-failure.ts";
import { dataEvent, EventStream, KEEP_ALIVE_MS, type OpenStreams } from "./sse.ts";

/** What one request subscribes to: channels (SUBSCRIBE) or patterns (PSUBSCRIBE). */
interface Subscription {
  kind: "subscribe" | "psubscribe";
  names: string[];
}

export interface StreamBackend {
  /** Connections for subscription streams, one per stream while it lasts. */
  subscribers: ConnectionPool;
  streams: OpenStreams;
  /** Interval of the `: ping` comments; tests shorten it. */
  keepAliveMs?: number;
}

const SUBSCRIPTION_PATH = /^\/(p?subscribe)(?:\/(.*))?$/i;

/**
 * `/subscribe/<channel>` or `/psubscribe/<pattern>`, percent-decoded; further segments are
 * further names, as every other path command takes one argument per segment. Undefined for
 * any other path.
 */
export function subscriptionOf(path: string): Subscription | undefined {
  const match = SUBSCRIPTION_PATH.exec(path);
  if (!match) return undefined;
  const kind = match[1]?.toLowerCase() === "psubscribe" ? "psubscribe" : "subscribe";
  if (match[2] === undefined) throw new HttpError(400, `ERR wrong number of arguments for '${kind}' command`);
  return { kind, names: match[2].split("/").map(decodeSegment) };
}

/**
 * Serves one subscription as server-sent events on a pooled Redis connection of its own, until the
 * client, Redis or the server ends it. A name's `subscribe` event goes out only once Redis confirmed
 * the name, so a client that waits for it misses nothing published after. Throws, with nothing
 * written yet, when the subscription cannot be set up.
 */
export async function streamSubscription(
  response: ServerResponse,
  backend: StreamBackend,
  subscription: Subscription,
  headers: OutgoingHttpHeaders,
): Promise<void> {
  const { subscriber, release } = await takePlace(backend);
  const confirming = confirm(subscriber, subscription, () => stream.ended);
  const end = () => stream.end();
  // Said before the end, which @upstash/redis keeps to itself otherwise: a client that listens
  // for "error" learns that its subscription is gone (a fencelock lock set opens another).
  const endWith = (reason: string) => () => {
    for (const name of subscription.names) stream.send(dataEvent(["error", name, reason]));
    stream.end();
  };
  const dropped = endWith("ERR the local server lost its Redis connection");
  const closing = endWith("ERR the local server is closing");
  const stream = new EventStream(response, () => {
    release();
    backend.streams.delete(closing);
    subscriber.off("end", dropped);
    subscriber.off(MESSAGE_EVENT[subscription.kind], forward);
    // Once every SUBSCRIBE is answered: one still to go out after the UNSUBSCRIBE would stay.
    void confirming.catch(() => undefined).then(() => giveBack(backend.subscribers, subscriber, subscription));
  });
  const forward = forwarder(subscription.kind, stream);
  subscriber.on(MESSAGE_EVENT[subscription.kind], forward);
  response.once("close", end);
  subscriber.once("end", dropped);
  backend.streams.add(closing);
  if (response.destroyed) end(); // the client left while the connection was being taken
  try {
    const confirmations = await confirming;
    if (stream.ended) throw new RedisUnavailableError("the subscription ended before Redis confirmed it (the connection closed, or over 32 MB of messages came first)");
    stream.open(headers, confirmations, backend.keepAliveMs ?? KEEP_ALIVE_MS);
  } catch (error) {
    stream.end();
    if (response.destroyed) return; // nobody left to tell
    throw isReplyError(error) ? new HttpError(400, error.message) : unavailable(error);
  }
}

/** A place among the open streams and a connection for it; the place is given back when no connection comes. */
async function takePlace(backend: StreamBackend): Promise<{ subscriber: Redis; release: () => void }> {
  const release = backend.streams.reserve();
  try {
    return { subscriber: await backend.subscribers.take(), release };
  } catch (error) {
    release();
    throw error;
  }
}

/**
 * Unsubscribes a stream's connection, so that the next stream on it starts from nothing, and
 * gives it back; one that cannot be unsubscribed is closed instead.
 */
async function giveBack(pool: ConnectionPool, subscriber: Redis, { kind, names }: Subscription): Promise<void> {
  const unique = [...new Set(names)];
  try {
    await (kind === "subscribe" ? subscriber.unsubscribe(...unique) : subscriber.punsubscribe(...unique));
  } catch {
    // Refused (an ACL, -BUSY during a long script) or the connection broke: closing it is what
    // drops its subscriptions, and the next stream must get another one.
    pool.discard(subscriber);
    return;
  }
  pool.giveBack(subscriber);
}

/**
 * Subscribes one name at a time, so each event carries Redis' count for it; stops once the stream has ended,
 * checked only after an answer (the stream does not exist yet when the first SUBSCRIBE goes out).
 */
async function confirm(subscriber: Redis, { kind, names }: Subscription, ended: () => boolean): Promise<string[]> {
  const events: string[] = [];
  for (const name of names) {
    const count = kind === "subscribe" ? await subscriber.subscribe(name) : await subscriber.psubscribe(name);
    events.push(dataEvent([kind, name, String(count)]));
    if (ended()) break;
  }
  return events;
}

const MESSAGE_EVENT = { subscribe: "messageBuffer", psubscribe: "pmessageBuffer" } as const;

/**
 * Payloads go out as UTF-8 text, never base64 even when `Upstash-Encoding: base64` was sent:
 * @upstash/redis sends that header on every request but does not decode stream events.
 */
function forwarder(kind: Subscription["kind"], stream: EventStream): (...args: Array<string | Buffer>) => void {
  return kind === "subscribe"
    ? (channel, message) => stream.send(dataEvent(["message", String(channel), String(message)]))
    : (pattern, channel, message) => stream.send(dataEvent(["pmessage", String(pattern), String(channel), String(message)]));
}
