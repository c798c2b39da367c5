// A Redis 7 ACL user made the usual way (ACL SETUSER app on >pw ~* +@all) has no pub/sub channel
// rights (acl-pubsub-default resetchannels): a release still hands the lock over, and waits poll.
// The rights docs/node.md names are enough for push wake-ups.
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../src/local/index.ts";
import { fromNodeRedis } from "../../../src/node-redis.ts";
import { uniquePrefix } from "../../support/upstash.ts";

let server: RedisServer;
let admin: Redis;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
  await admin.acl("SETUSER", "app", "on", ">pw", "~*", "+@all", "resetchannels");
  await admin.acl("SETUSER", "orders", "on", ">pw", "~orders:*", "+@all");
  await admin.acl("SETUSER", "scripts-only", "on", ">pw", "~*", "+eval", "+evalsha");
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await admin?.quit();
  await server?.stop();
});

const asApp = () => server.url.replace("redis://", "redis://app:pw@");

const adapters: [string, (url?: string) => Promise<RedisClient>][] = [
  ["fromIoredis", async (url = asApp()) => {
    const client = new Redis(url);
    closers.push(() => client.quit());
    return fromIoredis(client);
  }],
  ["fromNodeRedis", async (url = asApp()) => {
    const client = await createClient({ url }).on("error", () => {}).connect();
    closers.push(() => client.close());
    return fromNodeRedis(client);
  }],
];

describe.each(adapters)("%s as a user without channel rights", (_, adapter) => {
  it("releases to a waiting caller, which gets the lock by its next look; the lock set says why it polls", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const redis = await adapter();
      const prefix = uniquePrefix("acl");
      const holder = await createLocks({ redis, prefix }).acquire("gate");
      const waiting = createLocks({ redis, prefix }).acquire("gate", { waitMs: 8_000 });
      await vi.waitFor(() => expect(warn).toHaveBeenCalled(), { timeout: 5_000 });
      const released = await holder.release().catch((error: unknown) => error);
      const lease = await waiting;
      expect(released).toBe("released");
      expect(lease.fence).toBeGreaterThan(holder.fence);
      expect(await lease.release()).toBe("released");
      expect(String(warn.mock.calls[0]?.[0])).toMatch(/NOPERM.*grant this Redis user the commands and channels push wake-ups use \(ACL rules \+subscribe \+publish &fencelock\.\*; on a Cluster \+ssubscribe \+spublish\)/);
    } finally {
      warn.mockRestore();
    }
  });
});

describe.each(adapters)("%s as a user with the rights the docs name", (_, adapter) => {
  it("wakes a waiter by push: no warning, and Redis refused no command or channel", async () => {
    const prefix = uniquePrefix("acl-push");
    const user = `push-${prefix}`;
    await admin.acl("SETUSER", user, "on", ">pw", `~${prefix}:*`, "+eval", "+evalsha", "+@read", "+@write", "+time", "+subscribe", "+publish", "&fencelock.*");
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const redis = await adapter(server.url.replace("redis://", `redis://${user}:pw@`));
      const holder = await createLocks({ redis, prefix }).acquire("gate");
      const waiting = createLocks({ redis, prefix }).acquire("gate", { waitMs: 8_000 });
      // Subscribed before the release, so that the handover goes as a message.
      await vi.waitFor(async () => expect(await admin.pubsub("CHANNELS", "fencelock.*")).not.toEqual([]), { timeout: 5_000 });
      expect(await holder.release()).toBe("released");
      expect((await waiting).fence).toBeGreaterThan(holder.fence);
      // ioredis's ready check may not run INFO, and says so: not ours.
      expect(warn.mock.calls.filter(([message]) => String(message).startsWith("fencelock"))).toEqual([]);
      const refusals = (await admin.acl("LOG")) as unknown[][];
      expect(refusals.filter((entry) => entry.includes(user) && !entry.includes("info"))).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });
});

// Not Upstash's hints alone: a TCP client's password is in its URL, its rights in an ACL.
describe("an ACL user that may not use fencelock's keys, and a wrong password", () => {
  it("say what to grant and what to check", async () => {
    const client = new Redis(server.url.replace("redis://", "redis://orders:pw@"));
    closers.push(() => client.quit());
    const denied = await createLocks({ redis: fromIoredis(client), prefix: uniquePrefix("acl-keys") }).tryAcquire("gate").catch((error: unknown) => error);
    const hint = /an ACL user needs ~prefix:\* \+eval \+evalsha \+@read \+@write \+time\)\.$/;
    expect(String(denied)).toMatch(/NOPERM/);
    expect(String(denied)).toMatch(hint);
    // Allowed the scripts but not the commands they run: Redis 7 answers otherwise.
    const scriptsOnly = new Redis(server.url.replace("redis://", "redis://scripts-only:pw@"));
    closers.push(() => scriptsOnly.quit());
    const refusedInside = await createLocks({ redis: fromIoredis(scriptsOnly), prefix: uniquePrefix("acl-cmds") }).tryAcquire("gate").catch((error: unknown) => error);
    expect(String(refusedInside)).toMatch(/can't run this command/);
    expect(String(refusedInside)).toMatch(hint);
    // The rights the hint names are enough.
    const prefix = uniquePrefix("acl-enough");
    await admin.acl("SETUSER", "enough", "on", ">pw", `~${prefix}:*`, "+eval", "+evalsha", "+@read", "+@write", "+time");
    const enough = new Redis(server.url.replace("redis://", "redis://enough:pw@"));
    closers.push(() => enough.quit());
    const lease = await createLocks({ redis: fromIoredis(enough), prefix }).acquire("gate");
    expect(await lease.release()).toBe("released");
    const wrong = new Redis(server.url.replace("redis://", "redis://app:wrong@"), { retryStrategy: () => null });
    wrong.on("error", () => {});
    closers.push(() => wrong.disconnect());
    const refused = await createLocks({ redis: fromIoredis(wrong), timeoutMs: 2_000 }).tryAcquire("gate").catch((error: unknown) => error);
    expect(String(refused)).toMatch(/WRONGPASS.*\(over TCP: the Redis URL's password\)/);
  });
});
