// What a user passes by mistake gets a LockConfigError that says what to pass instead; and the
// issue's case: with stringNumbers, an acquire through the adapter succeeds.
import { Cluster, Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { serverRouter, SubscriberGroup } from "../../../../src/tcp/ioredis-pubsub.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** The LockConfigError `make` throws, for its message. */
function configError(make: () => unknown): LockConfigError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(LockConfigError);
    return error as LockConfigError;
  }
  throw new Error("no LockConfigError thrown");
}

// Made without connecting: lazyConnect.
const ioredis = new Redis({ lazyConnect: true });
const cluster = new Cluster([{ host: "127.0.0.1", port: 1 }], { lazyConnect: true });

describe("a plain ioredis client passed to createLocks or createFencedStore", () => {
  it("is refused at once, with the adapter to use named", () => {
    for (const make of [() => createLocks({ redis: ioredis as never }), () => createFencedStore({ redis: cluster as never })]) {
      expect(configError(make).message).toMatch(/fromIoredis\(client\) from fencelock\/ioredis/);
    }
  });
});

describe("fromIoredis", () => {
  it("refuses what is not an ioredis client, saying what to pass", () => {
    expect(configError(() => fromIoredis(upstash() as never)).message).toMatch(/@upstash\/redis client.*pass it to createLocks as it is/);
    expect(configError(() => fromIoredis(fromIoredis(ioredis) as never)).message).toMatch(/already made/);
    expect(configError(() => fromIoredis(createClient() as never)).message).toMatch(/use fromNodeRedis from fencelock\/node-redis/);
    for (const wrong of [undefined, null, {}, "redis://127.0.0.1"]) {
      expect(configError(() => fromIoredis(wrong as never)).message).toMatch(/expected an ioredis client: new Redis\(url\) or new Cluster\(nodes\)/);
    }
  });

  it("checks its options", () => {
    expect(configError(() => fromIoredis(cluster, { pubsub: "sharp" as never })).message).toMatch(/pubsub: expected "sharded" or "classic"/);
    expect(configError(() => fromIoredis(cluster, { sharded: true } as never)).message).toMatch(/unknown option "sharded"/);
    expect(configError(() => fromIoredis(ioredis, { pubsub: "sharded" })).message).toMatch(/pubsub: "sharded" is for a Cluster client; a single server has classic pub\/sub only/);
  });

  it("subscribes by shard channel on a Cluster unless told classic, and never on a single Redis", () => {
    expect(Object.keys(fromIoredis(ioredis)).sort()).toEqual(["eval", "evalsha", "subscribe"]);
    expect(Object.keys(fromIoredis(cluster)).sort()).toEqual(["eval", "evalsha", "ssubscribe", "subscribe"]);
    expect(Object.keys(fromIoredis(cluster, { pubsub: "classic" })).sort()).toEqual(["eval", "evalsha", "subscribe"]);
    expect(Object.keys(fromIoredis(ioredis, { pubsub: "classic" })).sort()).toEqual(["eval", "evalsha", "subscribe"]);
  });

  it("subscribes by classic channel on a Cluster whose key prefix has braces: they would move the lock keys' slot from the shard channel's", () => {
    const braced = new Cluster([{ host: "127.0.0.1", port: 1 }], { lazyConnect: true, keyPrefix: "{app}:" });
    expect(Object.keys(fromIoredis(braced)).sort()).toEqual(["eval", "evalsha", "subscribe"]);
    braced.disconnect();
  });
});

describe("with stringNumbers, which fencelock's own local server sets", () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url, { stringNumbers: true });
  });
  afterAll(async () => {
    await client?.quit();
    await server?.stop();
  });

  // Before the adapter, hand-written glue failed every acquire with "an unexpected reply" after the lock was taken.
  it("an acquire succeeds, and its lock is released", async () => {
    const locks = createLocks({ redis: fromIoredis(client), prefix: uniquePrefix("string-numbers") });
    const lease = await locks.acquire("job");
    expect(await locks.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lease.release()).toBe("released");
    expect((await locks.inspect("job")).held).toBe(false);
  });

  // As fromNodeRedis says of a closed client: the app's to fix, not a Redis to check on.
  it("a client the app closed fails each call with LockConfigError, not as a Redis that is down", async () => {
    const closing = new Redis(server.url);
    const locks = createLocks({ redis: fromIoredis(closing), prefix: uniquePrefix("closed") });
    await (await locks.acquire("job")).release();
    await closing.quit();
    await expect(locks.tryAcquire("job")).rejects.toThrow(/Invalid ioredis client: it is closed: quit\(\) or disconnect\(\) was called/);
  });

  // It never recovers: a LockUnavailableError would invite retries, and its hint points at the network.
  it("a client the app subscribed with fails each call with LockConfigError, saying to pass another", async () => {
    const subscribed = new Redis(server.url);
    await subscribed.subscribe("app-events");
    const locks = createLocks({ redis: fromIoredis(subscribed), prefix: uniquePrefix("subscribed") });
    await expect(locks.tryAcquire("job")).rejects.toThrow(/Invalid ioredis client: it is in subscriber mode .*pass a client that is not subscribed/);
    subscribed.disconnect();
  });
});

// Redis 6 has no SSUBSCRIBE; a Redis 7 with the command renamed away answers as Redis 6 would.
describe("sharded pub/sub where the server has no SSUBSCRIBE", () => {
  it("fails the stream with a message that says to pass pubsub: \"classic\"", async () => {
    const server = await startRedisServer({ args: ["--rename-command", "SSUBSCRIBE", ""] });
    const client = new Redis(server.url);
    const group = new SubscriberGroup(serverRouter(client), "sharded");
    await expect(group.subscribe("fencelock.x:{a}")).rejects.toThrow(
      /unknown command.*sharded pub\/sub needs Redis 7 or later; pass fromIoredis\(cluster, \{ pubsub: "classic" \}\)/,
    );
    group.close();
    await client.quit();
    await server.stop();
  });
});
