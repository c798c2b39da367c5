import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import { HttpError, RedisUnavailableError } from "./errors.ts";
import { decodeSegment } from "./http-io.ts";
import { isReplyError, openSubscriber, unavailable } from "./redis-client.ts";
import { dataEvent, EventStream, KEEP_ALIVE_MS, type OpenStreams } from "./sse.ts";

/** What one request subscribes to: channels (SUBSCRIBE) or patterns (PSUBSCRIBE). */
export interface Subscription {
  kind: "subscribe" | "psubscribe";
  names: string[];
}

export interface StreamBackend {
  redis: Redis;
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
 * Serves one subscription as server-sent events on a Redis connection of its own, until the
 * client goes away, Redis does, or the server closes. Each name's `subscribe` event is written
 * only after Redis confirmed that name, and Redis delivers every PUBLISH that follows its
 * confirmation, so a client that waits for the event misses nothing published after it.
 * Throws, with nothing written yet, when the subscription cannot be set up.
 */
export async function streamSubscription(
  response: ServerResponse,
  backend: StreamBackend,
  subscription: Subscription,
  headers: OutgoingHttpHeaders,
): Promise<void> {
  const subscriber = await openSubscriber(backend.redis);
  const end = () => stream.end();
  const stream = new EventStream(response, () => {
    subscriber.disconnect(); // closing the connection drops its subscriptions in Redis
    backend.streams.delete(end);
  });
  response.once("close", end);
  subscriber.once("end", end);
  backend.streams.add(end);
  if (response.destroyed) end(); // the client left while the connection was being opened
  forwardMessages(subscriber, subscription.kind, stream);
  try {
    const confirmations = await confirm(subscriber, subscription);
    if (stream.ended) throw new RedisUnavailableError("the subscription ended before Redis confirmed it");
    stream.open(headers, confirmations, backend.keepAliveMs ?? KEEP_ALIVE_MS);
  } catch (error) {
    stream.end();
    if (response.destroyed) return; // nobody left to tell
    throw isReplyError(error) ? new HttpError(400, error.message) : unavailable(error);
  }
}

/** Subscribes one name at a time, so that each event carries the count Redis gave for that name. */
async function confirm(subscriber: Redis, { kind, names }: Subscription): Promise<string[]> {
  const events: string[] = [];
  for (const name of names) {
    const count = kind === "subscribe" ? await subscriber.subscribe(name) : await subscriber.psubscribe(name);
    events.push(dataEvent([kind, name, String(count)]));
  }
  return events;
}

/**
 * Payloads go out as UTF-8 text, never base64 even when `Upstash-Encoding: base64` was sent:
 * @upstash/redis sends that header on every request but does not decode stream events.
 */
function forwardMessages(subscriber: Redis, kind: Subscription["kind"], stream: EventStream): void {
  if (kind === "subscribe") {
    subscriber.on("messageBuffer", (channel: Buffer, message: Buffer) => {
      stream.send(dataEvent(["message", channel.toString(), message.toString()]));
    });
  } else {
    subscriber.on("pmessageBuffer", (pattern: string, channel: Buffer, message: Buffer) => {
      stream.send(dataEvent(["pmessage", pattern, channel.toString(), message.toString()]));
    });
  }
}
