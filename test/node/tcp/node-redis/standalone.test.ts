// fencelock/node-redis on one real redis-server, over RESP2 and RESP3, with and without type
// mappings that turn integers into text and strings into Buffers.
import { createClient, RESP_TYPES } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFencedStore, createLocks, StaleFenceError, type RedisClient } from "../../../../src/index.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { fromNodeRedis } from "../../../../src/node-redis.ts";
import { until } from "../../../support/until.ts";
import { expectPushHandover } from "./observe.ts";

const MAPPED = { [RESP_TYPES.NUMBER]: String, [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.SIMPLE_STRING]: Buffer };

interface Config {
  RESP: 2 | 3;
  mapped?: boolean;
}

const configs: [string, Config][] = [
  ["RESP2", { RESP: 2 }],
  ["RESP3", { RESP: 3 }],
  ["RESP2 with integers as text and strings as Buffers", { RESP: 2, mapped: true }],
  ["RESP3 with integers as text and strings as Buffers", { RESP: 3, mapped: true }],
];

let server: RedisServer;
beforeAll(async () => void (server = await startRedisServer()));
afterAll(() => server.stop());

let prefixes = 0;
const uniquePrefix = (label: string) => `nr-${label}-${++prefixes}`;

/** A connected node-redis client on the test server; closed after the file's tests. */
async function connected({ RESP, mapped }: Config, name?: string) {
  const client = createClient({ RESP, url: server.url, commandOptions: mapped ? { typeMapping: MAPPED } : {}, ...(name && { name }) });
  client.on("error", () => {});
  await client.connect();
  return client;
}

describe.each(configs)("fromNodeRedis over %s", (_, options) => {
  let client: Awaited<ReturnType<typeof connected>>;
  let redis: RedisClient;
  beforeAll(async () => {
    client = await connected(options);
    redis = fromNodeRedis(client);
  });
  afterAll(() => client.close());

  it("acquires, heartbeats and releases with fences rising; tryAcquire finds a held lock busy", async () => {
    const locks = createLocks({ redis, prefix: uniquePrefix("cycle"), leaseMs: 2_000 });
    const first = await locks.acquire("gate");
    expect(await locks.tryAcquire("gate")).toBeNull();
    await first.heartbeat();
    expect(first.remainingMs()).toBeGreaterThan(1_000);
    expect(await first.release()).toBe("released");
    const second = await locks.acquire("gate");
    expect(second.fence).toBeGreaterThan(first.fence);
    expect(await second.release()).toBe("released");
  });

  it("runs withLock and inspect", async () => {
    const locks = createLocks({ redis, prefix: uniquePrefix("with-lock") });
    const seen = await locks.withLock("gate", async (lease) => ({ fence: lease.fence, state: await locks.inspect("gate") }));
    expect(seen.state).toMatchObject({ held: true, fence: seen.fence, holds: 1, waiters: 0 });
    expect(await locks.inspect("gate")).toMatchObject({ held: false, fence: seen.fence, holds: 0 });
  });

  it("fenced store: accepts a write under a fresh fence and refuses a stale one", async () => {
    const prefix = uniquePrefix("store");
    const locks = createLocks({ redis, prefix });
    const store = createFencedStore({ redis, prefix });
    const old = await locks.acquire("invoice:42");
    await old.release();
    const fresh = await locks.acquire("invoice:42");
    await store.write("invoice:42", { paid: true }, fresh.fence);
    await expect(store.write("invoice:42", { paid: false }, old.fence)).rejects.toBeInstanceOf(StaleFenceError);
    expect(await store.read("invoice:42")).toEqual({ value: { paid: true }, fence: fresh.fence });
    await fresh.release();
  });

  it("falls back to EVAL after SCRIPT FLUSH", async () => {
    const locks = createLocks({ redis, prefix: uniquePrefix("noscript") });
    await (await locks.acquire("gate")).release();
    await client.scriptFlush();
    await (await locks.acquire("gate")).release();
  });

  it("hands a waiter the lock on release, by push (the default)", async () => {
    await expectPushHandover(redis, uniquePrefix("push"), ["gate", "order:{42}/ü"], "classic");
  });
});

describe.each([2, 3] as const)("fromNodeRedis subscriber over RESP%i", (RESP) => {
  it("serves every wait of every lock set on the client on one pub/sub connection, closed once idle", async () => {
    // The subscriber connection is a duplicate of the client, and so has its name.
    const name = `nr-one-connection-${RESP}`;
    const [client, admin] = await Promise.all([connected({ RESP }, name), connected({ RESP: 2 })]);
    const pubsubClients = async () => (await admin.clientList({ TYPE: "PUBSUB" })).filter((info) => info.name === name).length;
    const redis = fromNodeRedis(client);
    const prefix = uniquePrefix("one-connection");
    const names = ["a", "b", "c", "d"];
    const held = await Promise.all(names.map((name) => createLocks({ redis, prefix }).acquire(name)));
    // Two lock sets, each with two waits, each given the client by a fromNodeRedis() of its own.
    const waiters = [createLocks({ redis: fromNodeRedis(client), prefix }), createLocks({ redis: fromNodeRedis(client), prefix })];
    const waiting = names.map((name, i) => waiters[i % 2]!.acquire(name, { waitMs: 20_000 }));
    await until(async () => (await pubsubClients()) === 1, 5_000);
    await Promise.all(held.map((lease) => lease.release()));
    const leases = await Promise.all(waiting);
    expect(await pubsubClients()).toBe(1);
    await Promise.all(leases.map((lease) => lease.release()));
    // A lock set closes its stream 2 s after its last wait; the connection goes with the last stream.
    await until(async () => (await pubsubClients()) === 0, 10_000);
    await Promise.all([client.close(), admin.close()]);
  });

  it("tells every stream when the subscriber connection drops, as messages may have been lost", async () => {
    const name = `nr-drop-${RESP}`;
    const [client, admin] = await Promise.all([connected({ RESP }, name), connected({ RESP: 2 })]);
    const redis = fromNodeRedis(client);
    const [confirmed, errors] = [{ n: 0 }, [] as unknown[]];
    const streams = ["one", "two"].map((channel) => {
      const stream = redis.subscribe!(channel);
      stream.on("subscribe", () => confirmed.n++);
      stream.on("error", (error) => errors.push(error));
      return stream;
    });
    await until(async () => confirmed.n === 2, 5_000);
    const [subscriber] = (await admin.clientList({ TYPE: "PUBSUB" })).filter((info) => info.name === name);
    await admin.sendCommand(["CLIENT", "KILL", "ID", String(subscriber!.id)]);
    await until(async () => errors.length >= 2, 5_000);
    expect(String(errors[0])).toMatch(/subscriber connection dropped/);
    await Promise.all(streams.map((stream) => stream.unsubscribe()));
    await Promise.all([client.close(), admin.close()]);
  });
});

describe("@example src/node-redis.ts", () => {
  it("runs as written, on the test server's URL", async () => {
    // --- the example ---
    const client = await createClient({ url: server.url })
      .on("error", (error) => console.error("redis", error)) // node-redis throws an error event nobody listens to
      .connect();
    const redis = fromNodeRedis(client);
    const locks = createLocks({ redis, prefix: "jobs" });
    const store = createFencedStore({ redis, prefix: "jobs" });

    await locks.withLock("job:42", async (lease) => {
      await store.write("job:42", { state: "done" }, lease.fence);
    });
    // --- end ---
    expect(await store.read("job:42")).toMatchObject({ value: { state: "done" } });
    await client.close();
  });
});
