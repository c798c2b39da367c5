import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { startLocalUpstash, startRedisServer, type LocalUpstash } from "../../../src/local/index.ts";
import { createHandler } from "../../../src/local/handler.ts";
import { SUBSCRIBER_NAME } from "../../../src/local/redis-client.ts";
import { listen } from "../../../src/local/server.ts";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";
import { handlerBackend } from "./backend.ts";
import { abortAfter, openRaw, type RawStream } from "./sse-client.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function privateServer(redisUrl?: string): Promise<LocalUpstash> {
  const local = await startLocalUpstash(redisUrl === undefined ? {} : { redisUrl });
  cleanup.push(() => local.close());
  return local;
}

/** The connections Redis has open: all of them, and the subscription streams' own. */
async function clients(local: LocalUpstash): Promise<{ all: number; subscribers: number }> {
  const { json } = await rest("/", { body: ["CLIENT", "LIST"], url: local.url, token: local.token });
  const lines = (json as { result: string }).result.trim().split("\n");
  return { all: lines.length, subscribers: lines.filter((line) => line.includes(`name=${SUBSCRIBER_NAME} `)).length };
}

/** What Redis has subscribed, on any connection. */
async function pubsub(local: LocalUpstash): Promise<{ channels: unknown; patterns: unknown }> {
  const auth = { url: local.url, token: local.token };
  const channels = (await rest("/", { body: ["PUBSUB", "CHANNELS"], ...auth })).json as { result: unknown };
  const patterns = (await rest("/", { body: ["PUBSUB", "NUMPAT"], ...auth })).json as { result: unknown };
  return { channels: channels.result, patterns: patterns.result };
}

/** How many times Redis ran a command (INFO commandstats). */
async function commandCalls(local: LocalUpstash, command: string): Promise<number> {
  const { json } = await rest("/", { body: ["INFO", "commandstats"], url: local.url, token: local.token });
  const calls = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec((json as { result: string }).result);
  return Number(calls?.[1] ?? 0);
}

describe("the event stream on the wire", () => {
  it("sends the subscribe event after Redis confirmed it, then one data line per message, never base64", async () => {
    const channel = `{c} é,${crypto.randomUUID()}`;
    const stream = await openRaw(`/subscribe/${encodeURIComponent(channel)}`); // with Upstash-Encoding: base64
    cleanup.push(() => stream.abort());
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    expect(stream.response.headers.get("cache-control")).toBe("no-cache");
    expect(stream.response.headers.get("upstash-sync-token")).toMatch(/\S/);
    expect(await stream.events()).toEqual([`data: subscribe,${channel},1\n\n`]);
    for (const payload of ["x,y é", 42, "two\nlines"]) await rest("/", { body: ["PUBLISH", channel, payload] });
    expect(await stream.events(3)).toEqual([
      `data: message,${channel},x,y é\n\n`,
      `data: message,${channel},42\n\n`,
      `data: message,${channel},"two\\nlines"\n\n`,
    ]);
  });

  it("subscribes to every path segment in turn, and serves psubscribe (GET with ?_token= too)", async () => {
    const [a, b] = [key("seg-a"), key("seg-b")];
    const both = await openRaw(`/subscribe/${a}/${b}`);
    cleanup.push(() => both.abort());
    expect(await both.events(2)).toEqual([`data: subscribe,${a},1\n\n`, `data: subscribe,${b},2\n\n`]);
    const { url, token } = inject("upstash");
    const pattern = `${key("p")}*`;
    const patterns = await openRaw(`/psubscribe/${encodeURIComponent(pattern)}?_token=${token}`, {
      method: "GET",
      url,
      headers: { authorization: "" },
    });
    cleanup.push(() => patterns.abort());
    expect(await patterns.events()).toEqual([`data: psubscribe,${pattern},1\n\n`]);
    await rest("/", { body: ["PUBLISH", `${pattern}1`, "{\"n\":1}"] });
    expect(await patterns.events()).toEqual([`data: pmessage,${pattern},${pattern}1,{"n":1}\n\n`]);
  });

  it.each([
    ["a wrong token", "/subscribe/c", "POST", "wrong", 401],
    ["no channel", "/subscribe", "POST", undefined, 400],
    ["a wrong method", "/psubscribe/c*", "PUT", undefined, 405],
    ["MONITOR, which is not served", "/monitor", "POST", undefined, 404],
  ])("answers a JSON error, not a stream, for %s", async (_, path, method, token, status) => {
    const reply = await rest(path, { method, token, body: "[]" });
    expect(reply).toMatchObject({ status, json: { error: expect.any(String) } });
    expect(reply.headers.get("content-type")).toBe("application/json");
  });

  it("sends `: ping` comments while the stream is quiet", async () => {
    const { backend, close } = await handlerBackend(20);
    const http = await listen(createHandler(backend), { host: "127.0.0.1", port: 0 });
    cleanup.push(close, () => http.close());
    const channel = key("quiet");
    const stream = await openRaw(`/subscribe/${channel}`, { url: http.url, token: "t" });
    expect(await stream.events(3)).toEqual([`data: subscribe,${channel},1\n\n`, ": ping\n\n", ": ping\n\n"]);
  });
});

describe("the lifetime of a stream", () => {
  it("leaves no subscription behind, and reuses its Redis connections, after many subscribe/abort cycles, confirmed or not", async () => {
    const local = await privateServer();
    const before = await clients(local);
    const redis = localRedis({}, local);
    for (let cycle = 0; cycle < 10; cycle++) {
      const subscriber = redis.subscribe(key("cycle"));
      await new Promise((resolve) => subscriber.on("subscribe", resolve));
      await subscriber.unsubscribe();
    }
    // Aborted while the server is still taking a connection or subscribing.
    for (let cycle = 0; cycle < 20; cycle++) await abortAfter(cycle % 5, `/subscribe/${key("early")}`, local);
    await expect.poll(() => pubsub(local), { timeout: 2_000 }).toEqual({ channels: [], patterns: 0 });
    const after = await clients(local);
    expect(before.subscribers).toBe(0);
    // Idle connections wait for the next stream (16 at most); a leak would leave about 30 here.
    expect(after.subscribers).toBeGreaterThan(0);
    expect(after.subscribers).toBeLessThanOrEqual(16);
    expect(after.all - after.subscribers).toBe(before.all);
  });

  it("stops subscribing a stream's names once its client has gone", async () => {
    const local = await privateServer();
    const names = Array.from({ length: 1_000 }, (_, i) => `n${i}`);
    // Redis confirms one name per round trip: the client leaves long before the thousandth.
    await abortAfter(5, `/subscribe/${names.join("/")}`, local);
    // The stream's teardown ends in UNSUBSCRIBE, once no SUBSCRIBE is left to answer.
    await expect.poll(() => commandCalls(local, "unsubscribe"), { timeout: 10_000 }).toBe(1);
    const subscribed = await commandCalls(local, "subscribe");
    expect(subscribed).toBeGreaterThan(0);
    expect(subscribed).toBeLessThan(names.length / 2);
    expect(await pubsub(local)).toEqual({ channels: [], patterns: 0 });
  });

  it("gives a reused connection's next stream only its own messages, counted from 1", async () => {
    const local = await privateServer();
    const [a, b, c] = [key("first"), key("second"), key("third")];
    const first = await openRaw(`/subscribe/${a}/${b}`, local);
    expect(await first.events(2)).toEqual([`data: subscribe,${a},1\n\n`, `data: subscribe,${b},2\n\n`]);
    first.abort();
    await expect.poll(() => pubsub(local)).toEqual({ channels: [], patterns: 0 });
    const next = await openRaw(`/subscribe/${c}`, local);
    cleanup.push(() => next.abort());
    expect(await next.events()).toEqual([`data: subscribe,${c},1\n\n`]);
    expect((await clients(local)).subscribers).toBe(1); // the same connection
    for (const channel of [a, b, c]) await rest("/", { body: ["PUBLISH", channel, channel], url: local.url, token: local.token });
    expect(await next.events()).toEqual([`data: message,${c},${c}\n\n`]);
  });

  it("counts each stream as a subscriber in PUBLISH and PUBSUB NUMSUB, as Upstash counts each client", async () => {
    const local = await privateServer();
    const channel = key("counted");
    const streams = await Promise.all([openRaw(`/subscribe/${channel}`, local), openRaw(`/subscribe/${channel}`, local)]);
    cleanup.push(() => streams.forEach((stream) => stream.abort()));
    await Promise.all(streams.map((stream) => stream.events()));
    const auth = { url: local.url, token: local.token };
    expect((await rest("/", { body: ["PUBSUB", "NUMSUB", channel], ...auth })).json).toEqual({ result: [channel, 2] });
    expect((await rest("/", { body: ["PUBLISH", channel, "hi"], ...auth })).json).toEqual({ result: 2 });
  });

  it("closes a connection whose UNSUBSCRIBE Redis refused, rather than hand it to the next stream", async () => {
    const redisServer = await startRedisServer();
    cleanup.push(() => redisServer.stop());
    const local = await privateServer(redisServer.url);
    // Redis can refuse an UNSUBSCRIBE (here an ACL; -BUSY during a long script): that stream's
    // connection is closed, and the streams opened meanwhile must not be given it.
    const admin = new Redis(redisServer.url);
    await admin.acl("SETUSER", "default", "-unsubscribe");
    admin.disconnect();
    const statuses: number[] = [];
    let ending: RawStream[] = [];
    for (let round = 0; round < 30; round++) {
      for (const stream of ending) stream.abort();
      const opening = Array.from({ length: 4 }, (_, i) => sleep(i).then(() => openRaw(`/subscribe/${key("refused")}`, local)));
      ending = await Promise.all(opening);
      statuses.push(...ending.map((stream) => stream.response.status));
    }
    for (const stream of ending) stream.abort();
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });

  it("close() ends every open stream promptly and cleanly, saying so first", async () => {
    const local = await privateServer();
    const logged = vi.spyOn(console, "error"); // where @upstash/redis reports a broken stream
    const [channel, pattern] = [key("a"), `${key("b")}*`];
    const raw = await Promise.all([openRaw(`/subscribe/${channel}`, local), openRaw(`/psubscribe/${pattern}`, local)]);
    await Promise.all(raw.map((stream) => stream.events()));
    const subscriber = localRedis({}, local).subscribe(key("client"));
    await new Promise((resolve) => subscriber.on("subscribe", resolve));
    const heard = new Promise((resolve) => subscriber.on("error", resolve));
    const started = performance.now();
    await local.close();
    expect(await Promise.all(raw.map((stream) => stream.events()))).toEqual([
      [`data: error,${channel},ERR the local server is closing\n\n`],
      [`data: error,${pattern},ERR the local server is closing\n\n`],
    ]);
    expect(await Promise.all(raw.map((stream) => stream.ended()))).toEqual(["done", "done"]);
    // @upstash/redis hands the event to the subscriber's "error" listeners: its stream's end it keeps to itself.
    expect(await heard).toMatchObject({ message: "ERR the local server is closing" });
    expect(performance.now() - started).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the client reads its stream's end in the background
    expect(logged).not.toHaveBeenCalled();
  });

  it("ends the stream when Redis goes away, saying so first, and answers 503 while it is down", async () => {
    const redisServer = await startRedisServer();
    cleanup.push(() => redisServer.stop());
    const local = await privateServer(redisServer.url);
    const channel = key("outage");
    const stream = await openRaw(`/subscribe/${channel}`, local);
    await stream.events();
    const started = performance.now();
    await redisServer.stop();
    expect(await stream.events()).toEqual([`data: error,${channel},ERR the local server lost its Redis connection\n\n`]);
    expect(await stream.ended()).toBe("done");
    expect(performance.now() - started).toBeLessThan(1_000);
    const refused = await rest(`/subscribe/${key("down")}`, { method: "POST", url: local.url, token: local.token });
    expect(refused).toMatchObject({ status: 503, json: { error: expect.stringMatching(/Redis is unavailable/) } });
  });
});
