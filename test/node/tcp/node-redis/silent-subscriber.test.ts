// fromNodeRedis' subscriber connection gone silent (open, passing nothing): node-redis confirms a
// channel it already has without asking the server, so the fresh stream a lock set opens every
// minute must prove the connection answers, or a new connection must take over.
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { serverBehindProxy } from "../../../support/silencing-proxy.ts";
import { until } from "../../../support/until.ts";

const rig = serverBehindProxy();

/** A stream on `channel`, and what it has said so far. */
function watched(subscribe: (channel: string) => WakeSubscriber, channel: string) {
  const seen = { confirmed: false, errors: [] as unknown[], messages: [] as unknown[] };
  const stream = subscribe(channel);
  stream.on("subscribe", () => (seen.confirmed = true));
  stream.on("error", (error) => seen.errors.push(error));
  stream.on("message", (event) => seen.messages.push(event));
  return { stream, seen };
}

describe("fromNodeRedis with a silent subscriber connection", () => {
  it("does not confirm a fresh stream on it: the streams hear of a drop, and the next one gets a new connection", async () => {
    const client = await createClient({ url: rig.proxy.url }).on("error", () => {}).connect();
    const publisher = await createClient({ url: rig.server.url }).on("error", () => {}).connect();
    const subscribe = fromNodeRedis(client).subscribe!;
    const first = watched(subscribe, "fencelock.silent");
    await until(async () => first.seen.confirmed, 5_000);
    expect(rig.proxy.silenceSubscribers()).toBe(1);
    // What a lock set does every minute: a fresh stream beside the old one.
    const refresh = watched(subscribe, "fencelock.silent");
    await until(async () => refresh.seen.confirmed || refresh.seen.errors.length > 0, 20_000);
    expect(refresh.seen.confirmed).toBe(false);
    expect(String(first.seen.errors[0])).toMatch(/subscriber connection dropped: no answer to PING within 10000 ms/);
    const next = watched(subscribe, "fencelock.silent");
    await until(async () => next.seen.confirmed, 5_000);
    await publisher.publish("fencelock.silent", "hello");
    await until(async () => next.seen.messages.length === 1, 5_000);
    await Promise.all([first, refresh, next].map(({ stream }) => stream.unsubscribe()));
    await Promise.all([client.close(), publisher.close()]);
  });
});
