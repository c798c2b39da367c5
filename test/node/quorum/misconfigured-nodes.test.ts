// Quorum mode and what a user gets wrong: a node's configuration error is said, not retried as an
// outage; and what a busy look costs.
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createLocks, LockConfigError, type RedisClient } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../src/local/index.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { uniquePrefix } from "../../support/upstash.ts";

let servers: RedisServer[] = [];
const clients: Redis[] = [];
beforeAll(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedisServer());
});
afterEach(() => {
  vi.restoreAllMocks();
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

/** A client of node `i`; closed (quit) when asked, as an app that closed it too early has it. */
async function node(i: number, closed = false): Promise<RedisClient> {
  const client = new Redis(servers[i]!.url);
  clients.push(client);
  const adapted = fromIoredis(client);
  if (closed) await client.quit();
  return adapted;
}

describe("quorum nodes the app misconfigured", () => {
  it("a majority misconfigured: LockConfigError naming each node, not QuorumUnavailableError (a retry cannot help)", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const locks = createLocks({ redis: [await node(0), await node(1, true), await node(2, true)], prefix: uniquePrefix("q-config") });
    const error = await locks.tryAcquire("job").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockConfigError);
    expect(String(error)).toMatch(/redis\[1\]: Invalid ioredis client: it is closed.*redis\[2\]: Invalid ioredis client: it is closed/);
  });

  it("one misconfigured: calls work on the others, and the node is named once in a warning", async () => {
    const warned = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const locks = createLocks({ redis: [await node(0), await node(1, true), await node(2)], prefix: uniquePrefix("q-config") });
    for (let i = 0; i < 3; i++) {
      const lease = await locks.acquire("job");
      await lease.heartbeat();
      expect(await lease.release()).toBe("released");
    }
    expect(warned).toHaveBeenCalledTimes(1);
    expect(String(warned.mock.calls[0]?.[0])).toMatch(/redis\[1\].*Invalid ioredis client: it is closed/);
  });
});

describe("a busy look in quorum mode", () => {
  // A copy of the request (a retry, a network duplicate) may still grant after the busy answer.
  it("gives back on every node, busy ones too: 2N requests", async () => {
    const sent: string[] = [];
    const counted = (redis: RedisClient): RedisClient => ({
      evalsha: (sha, keys, args) => (sent.push("evalsha"), redis.evalsha(sha, keys, args)),
      eval: (text, keys, args) => (sent.push(text === scripts.leave.text ? "leave" : "eval"), redis.eval(text, keys, args)),
    });
    const prefix = uniquePrefix("q-busy");
    const holder = await createLocks({ redis: [await node(0), await node(1), await node(2)], prefix }).acquire("job");
    const locks = createLocks({ redis: [counted(await node(0)), counted(await node(1)), counted(await node(2))], prefix });
    // The give-backs are not awaited: until each node has had its leave.
    const settle = () => vi.waitFor(() => expect(sent.filter((s) => s === "leave")).toHaveLength(3), { timeout: 5_000 });
    // Warm: the first call loads the scripts (EVAL after NOSCRIPT) on this client.
    expect(await locks.tryAcquire("job")).toBeNull();
    await settle();
    sent.length = 0;
    expect(await locks.tryAcquire("job")).toBeNull();
    await settle();
    expect(sent.sort()).toEqual(["evalsha", "evalsha", "evalsha", "leave", "leave", "leave"]);
    await holder.release();
  });
});
