// Push wake-ups through fromIoredis on a standalone redis-server: a release hands the lock to a
// waiter by a message, every wait shares one subscriber connection, and it closes once idle.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { uniquePrefix } from "../../../support/upstash.ts";
import { observed } from "./observe.ts";

let server: RedisServer;
let client: Redis;
let admin: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  [client, admin] = [new Redis(server.url), new Redis(server.url)];
});
afterAll(async () => {
  await Promise.all([client?.quit(), admin?.quit()]);
  await server?.stop();
});

/** Subscriber connections named `name`: the adapter's connections carry its client's connectionName. */
const pubsubConnections = async (name: string) =>
  String(await admin.client("LIST", "TYPE", "PUBSUB")).split("\n").filter((line) => line.includes(` name=${name} `)).length;

describe("push wake-ups through fromIoredis", () => {
  it("are on by default: a release hands the lock to the waiter by a message, with no attempt of its own", async () => {
    const prefix = uniquePrefix("ioredis-push");
    const holder = await createLocks({ redis: fromIoredis(client), prefix }).acquire("gate");
    const { client: redis, seen } = await observed(fromIoredis(client));
    const waiting = createLocks({ redis, prefix }).acquire("gate", { waitMs: 8_000 });
    await vi.waitFor(() => expect(seen.confirmations).toBe(1), { timeout: 5_000 });
    const attempts = seen.acquires;
    await holder.release();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(holder.fence);
    expect(seen).toMatchObject({ messages: 1, acquires: attempts });
    await lease.release();
  });

  it("work for a client with a keyPrefix, under which fencelock's keys then live", async () => {
    const prefix = uniquePrefix("ioredis-key-prefix");
    const prefixed = new Redis(server.url, { keyPrefix: "app:" });
    const holder = await createLocks({ redis: fromIoredis(prefixed), prefix }).acquire("gate");
    expect(await admin.exists(`app:${prefix}:{gate}:lock`)).toBe(1);
    const { client: redis, seen } = await observed(fromIoredis(prefixed));
    const waiting = createLocks({ redis, prefix }).acquire("gate", { waitMs: 8_000 });
    await vi.waitFor(() => expect(seen.confirmations).toBe(1), { timeout: 5_000 });
    await holder.release();
    await (await waiting).release();
    expect(seen.messages).toBe(1);
    await prefixed.quit();
  });

  it("serve every wait on a client, whatever its lock sets and adapters, on one subscriber connection, closed once idle", async () => {
    const prefix = uniquePrefix("ioredis-one");
    const named = new Redis(server.url, { connectionName: prefix });
    const names = ["a", "b"];
    const holders = await Promise.all(names.map((name) => createLocks({ redis: fromIoredis(client), prefix }).acquire(name)));
    // Three lock sets, each given the client by a fromIoredis() of its own.
    const observers = await Promise.all([1, 2, 3].map(() => observed(fromIoredis(named))));
    const total = (count: "confirmations" | "messages") => observers.reduce((sum, { seen }) => sum + seen[count], 0);
    const waiting = observers.flatMap(({ client: redis }) => names.map((name) => createLocks({ redis, prefix }).acquire(name, { waitMs: 8_000 })));
    await vi.waitFor(() => expect(total("confirmations")).toBe(6), { timeout: 5_000 });
    expect(await pubsubConnections(prefix)).toBe(1);
    // Each release hands its lock to the next waiter, whose release hands it on.
    await Promise.all(holders.map((holder) => holder.release()));
    await Promise.all(waiting.map(async (wait) => (await wait).release()));
    expect(total("messages")).toBe(6);
    // A lock set closes its stream 2 s after its last waiter; the connection goes with the last stream.
    await vi.waitFor(async () => expect(await pubsubConnections(prefix)).toBe(0), { timeout: 6_000, interval: 200 });
    await named.quit();
  });

  it("go on after the subscriber connection drops: the waiter looks again, and a fresh connection serves", async () => {
    const prefix = uniquePrefix("ioredis-drop");
    const named = new Redis(server.url, { connectionName: prefix });
    const holder = await createLocks({ redis: fromIoredis(client), prefix }).acquire("gate");
    const { client: redis, seen } = await observed(fromIoredis(named));
    const waiting = createLocks({ redis, prefix }).acquire("gate", { waitMs: 8_000 });
    await vi.waitFor(() => expect(seen.confirmations).toBe(1), { timeout: 5_000 });
    const line = String(await admin.client("LIST", "TYPE", "PUBSUB")).split("\n").find((entry) => entry.includes(` name=${prefix} `));
    await admin.call("CLIENT", "KILL", "ID", String(/\bid=(\d+)/.exec(line ?? "")?.[1]));
    const attempts = seen.acquires;
    await vi.waitFor(() => expect(seen).toMatchObject({ streams: 2, confirmations: 2 }), { timeout: 5_000 });
    expect(seen.acquires).toBeGreaterThan(attempts); // it looked again, as a message may have been lost
    await holder.release();
    await (await waiting).release();
    expect(seen.messages).toBe(1);
    expect(await pubsubConnections(prefix)).toBe(1);
    await named.quit();
  });

  it("leave nothing open after a wait: a process exits by itself once it has quit its client", async () => {
    const script = fileURLToPath(new URL("./wait-and-exit.ts", import.meta.url));
    const started = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, [script, server.url], { timeout: 15_000 });
    const [handedOver, doneAt] = stdout.trim().split(" ").slice(1);
    expect(handedOver).toBe("true");
    // The stream outlives its last waiter by 2 s, so that the next wait needs no new connection.
    expect(performance.now() - started).toBeLessThan(12_000);
    expect(Number(doneAt)).toBeGreaterThan(0);
  });
});
