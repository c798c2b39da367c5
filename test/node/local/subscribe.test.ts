import type { Redis } from "@upstash/redis";
import { describe, expect, inject, it } from "vitest";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";

type Subscriber = ReturnType<Redis["subscribe"]>;
type Event = [type: string, data: unknown];

/** Every event of the given types, in the order the client dispatched them. */
function record(subscriber: Subscriber, types: ReadonlyArray<"subscribe" | "psubscribe" | "message" | "pmessage" | "error">) {
  const log: Event[] = [];
  for (const type of types) subscriber.on(type, (data: unknown) => log.push([type, data]));
  return log;
}

async function subscribers(channel: string): Promise<number> {
  const { json } = await rest("/", { body: ["PUBSUB", "NUMSUB", channel] });
  return (json as { result: [string, number] }).result[1];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("redis.subscribe() through the local server", () => {
  it("fires subscribe (count 1) first, then delivers strings, numbers, JSON, commas, unicode and line breaks", async () => {
    const redis = localRedis();
    const channel = `{fence} wake é:${crypto.randomUUID()}`; // braces, a space and non-ASCII travel percent-encoded
    const subscriber = redis.subscribe(channel);
    const log = record(subscriber, ["subscribe", "message", "error"]);
    await expect.poll(() => log).toEqual([["subscribe", 1]]);
    const payloads = ["hello", 123, { a: 1, list: [1, "x,y"] }, "a,b,,c: héllo 👋", "two\nlines\r\n"];
    for (const payload of payloads) expect(await redis.publish(channel, payload)).toBe(1);
    await expect.poll(() => log.length).toBe(1 + payloads.length);
    expect(log).toEqual([["subscribe", 1], ...payloads.map((message) => ["message", { channel, message }])]);
    await subscriber.unsubscribe();
  });

  it("delivers pattern messages with their pattern and channel", async () => {
    const redis = localRedis();
    const prefix = key("pattern");
    const subscriber = redis.psubscribe(`${prefix}:*`);
    const log = record(subscriber, ["psubscribe", "pmessage", "error"]);
    await expect.poll(() => log).toEqual([["psubscribe", 1]]);
    await redis.publish(`${prefix}:a`, { n: 1 });
    await redis.publish(`${prefix}-not-matching`, 0);
    await redis.publish(`${prefix}:b`, 2);
    await expect.poll(() => log.length).toBe(3);
    expect(log.slice(1)).toEqual([
      ["pmessage", { pattern: `${prefix}:*`, channel: `${prefix}:a`, message: { n: 1 } }],
      ["pmessage", { pattern: `${prefix}:*`, channel: `${prefix}:b`, message: 2 }],
    ]);
    await subscriber.unsubscribe();
  });

  it("delivers to two subscribers of one channel", async () => {
    const redis = localRedis();
    const channel = key("two");
    const [first, second] = [redis.subscribe(channel), redis.subscribe(channel)];
    const logs = [record(first, ["subscribe", "message"]), record(second, ["subscribe", "message"])];
    await expect.poll(() => logs).toEqual([[["subscribe", 1]], [["subscribe", 1]]]);
    expect(await redis.publish(channel, "both")).toBe(2);
    await expect.poll(() => logs.map((log) => log[1])).toEqual([
      ["message", { channel, message: "both" }],
      ["message", { channel, message: "both" }],
    ]);
    await Promise.all([first.unsubscribe(), second.unsubscribe()]);
  });

  it("stops delivering after unsubscribe(), and the server drops the Redis subscription", async () => {
    const redis = localRedis();
    const channel = key("unsubscribe");
    const subscriber = redis.subscribe(channel);
    const log = record(subscriber, ["subscribe", "message"]);
    await expect.poll(() => log.length).toBe(1);
    await redis.publish(channel, "before");
    await expect.poll(() => log.length).toBe(2);
    expect(await subscribers(channel)).toBe(1);
    await subscriber.unsubscribe();
    await expect.poll(() => subscribers(channel)).toBe(0);
    expect(await redis.publish(channel, "after")).toBe(0);
    await sleep(50);
    expect(log).toEqual([["subscribe", 1], ["message", { channel, message: "before" }]]);
  });

  it("gives an error event for a wrong token", async () => {
    const redis = localRedis({ retry: false }, { url: inject("upstash").url, token: "wrong" });
    const subscriber = redis.subscribe(key("denied"));
    const log = record(subscriber, ["subscribe", "message", "error"]);
    await expect.poll(() => log.length).toBe(1);
    expect(log[0]?.[0]).toBe("error");
    expect(String(log[0]?.[1])).toMatch(/WRONGPASS/);
  });

  it("survives an abort in the middle of a burst of messages", async () => {
    const redis = localRedis();
    const channel = key("burst");
    const subscriber = redis.subscribe(channel);
    const log = record(subscriber, ["subscribe", "message", "error"]);
    await expect.poll(() => log.length).toBe(1);
    const burst = Promise.all(Array.from({ length: 200 }, (_, i) => redis.publish(channel, { i, pad: "x".repeat(500) })));
    await expect.poll(() => log.length, { interval: 1 }).toBeGreaterThan(1);
    await subscriber.unsubscribe();
    await burst;
    await expect.poll(() => subscribers(channel)).toBe(0);
    expect(log.filter(([type]) => type === "error")).toEqual([]);
    expect(await redis.ping()).toBe("PONG");
  });
});
