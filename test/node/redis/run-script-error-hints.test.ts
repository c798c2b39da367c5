import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { createClient } from "redis";
import { describe, expect, inject, it } from "vitest";
import { createFencedStore, createLocks, LockUnavailableError, type RedisClient } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { failure, locksAt } from "../../support/failure.ts";
import { RedisProcess } from "../../support/faults/redis-process.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("a Redis that is down or slow", () => {
  it("says the token was refused, without leaking the owner token", async () => {
    const { url } = inject("upstash");
    const locks = locksAt(url, "wrong-token");
    const owner = "ab".repeat(16);
    const { error } = await failure(locks.acquire("job", { owner, waitMs: 0 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/token was refused/);
    expect(error.message).not.toContain(owner);
    expect(JSON.stringify(error)).not.toContain(owner);
  });

  // fetch quotes a header value it refuses: a token pasted over two lines would be in the message, and in the guards' logs.
  it("never puts a token with a line break into an error message, and says what is wrong with it", async () => {
    const locks = createLocks({ redis: upstash({ token: "first-line\r\nSECRET-SECOND-LINE", retry: false }) });
    const { error } = await failure(locks.tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).not.toMatch(/SECRET|first-line/);
    expect(error.message).toMatch(/\(a header value is an invalid header value\.\); the token has a line break or control character\./);
  });

  it("never puts credentials written into the Redis URL into an error message", async () => {
    // Pasted unencoded, a password may hold `@` or `/` (base64 tokens hold `/`).
    for (const password of ["SECRET-TOKEN", "SE@CRET", "SE/CRET"]) {
      const redis = new Redis({ url: `https://default:${password}@127.0.0.1:9`, token: "x", retry: false, enableTelemetry: false });
      const { error } = await failure(createLocks({ redis }).tryAcquire("job"));
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error.message).not.toContain("CRET");
    }
  });

  // An error body from the endpoint or a proxy in front of it reaches the message whole; the
  // credentials scrub once backtracked from every `//` of it: seconds for 40 KB of slashes.
  it("reads a long hostile error message in linear time, and still scrubs credentials in it", async () => {
    const hostile: RedisClient = {
      evalsha: () => Promise.reject(new Error(`ERR ${"/".repeat(150_000)} https://user:SECRET@host`)),
      eval: () => Promise.reject(new Error("unused")),
    };
    const { error, ms } = await failure(createLocks({ redis: hostile }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).not.toContain("SECRET");
    // Quadratic, this length would take tens of seconds; linear, a busy machine stays far below the bound.
    expect(ms).toBeLessThan(1_000);
  });

  it("says how to fix a key under the prefix that is not fencelock's", async () => {
    const prefix = uniquePrefix("foreign");
    await upstash().set(`${prefix}:{job}:lock`, "someone else's");
    const { error } = await failure(createLocks({ redis: upstash(), prefix }).tryAcquire("job"));
    expect(error.message).toMatch(/WRONGTYPE.*not fencelock's: use another prefix/);
  });

  it("says that a value over the server's request size limit is too large, not that Redis is unreachable", async () => {
    const prefix = uniquePrefix("too-large");
    const lease = await createLocks({ redis: upstash(), prefix }).acquire("blob");
    const store = createFencedStore({ redis: upstash(), prefix });
    // The local server, like Upstash, refuses a request body over its limit (10 MB here).
    const { error } = await failure(store.write("blob", "x".repeat(11_000_000), lease.fence));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/max request size exceeded.*the value is too large/);
    expect(error.message).not.toMatch(/network/);
    expect(await store.read("blob")).toBeNull();
  });

  it("says that a value is too large when a proxy in front of Redis refuses it (HTTP 413)", async () => {
    // A client standing in for @upstash/redis given a proxy's HTML 413 page; the message is what is tested.
    const refusing = async () => {
      throw new Error("<html><head><title>413 Request Entity Too Large</title></head></html>");
    };
    const { error } = await failure(createFencedStore({ redis: { evalsha: refusing, eval: refusing } }).write("blob", "x", 1));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/the value is too large/);
  });

  // A hint picked from a "401" inside a number or a host name would send the reader to the token.
  it.each([
    ["a size", "ERR max request size exceeded. Limit: 10485760 bytes, Actual: 10540123 bytes", /the value is too large/],
    ["a host name", "error sending request for url (https://eu1-brave-cat-34017.upstash.io/pipeline): Connection refused", /check the Redis URL, token and network/],
    ["a timeoutMs", undefined, /no answer within 401ms, timeoutMs\); check the Redis URL, token and network/],
  ])("does not say the token was refused for a 401 inside %s", async (_, message, hint) => {
    const failing = message === undefined ? () => new Promise<never>(() => undefined) : async () => {
      throw new Error(message);
    };
    const { error } = await failure(createLocks({ redis: { evalsha: failing, eval: failing }, timeoutMs: 401 }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).not.toMatch(/token was refused/);
    expect(error.message).toMatch(hint);
  });

  // The scripts' refusal of a TTL they were sent (lua/acquire.lua) is not the store's refusal of a fence.
  it("does not say a fence is ahead of the clock when a script refuses a TTL argument", async () => {
    const refusing = async () => {
      throw new Error("ERR fencelock: malformed TTL argument");
    };
    const { error } = await failure(createLocks({ redis: { evalsha: refusing, eval: refusing } }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/malformed TTL argument/);
    expect(error.message).not.toMatch(/70 min|clock/);
  });

  it("says the database's request quota is used up, not that Redis is unreachable", async () => {
    // Upstash's answer once a plan's requests are spent; the message is what is tested.
    const spent = async () => {
      throw new Error("ERR max daily request limit exceeded. Limit: 10000, Usage: 10000, command was: [[\"evalsha\"]]");
    };
    const { error } = await failure(createLocks({ redis: { evalsha: spent, eval: spent } }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/limit exceeded.*the database's request quota is used up: see its plan in the Upstash console/);
  });

  // A full Redis refuses writes, release's too: the reader must look at memory, not the network.
  it("says that Redis is full when it is at maxmemory, for acquire and release alike", async () => {
    const server = await RedisProcess.start("full");
    const client = new IORedis(server.url);
    try {
      const locks = createLocks({ redis: fromIoredis(client), prefix: uniquePrefix("full") });
      const lease = await locks.acquire("job");
      await client.config("SET", "maxmemory", "1");
      for (const call of [locks.tryAcquire("other"), lease.release()]) {
        const { error } = await failure(call);
        expect(error).toBeInstanceOf(LockUnavailableError);
        expect(error.message).toMatch(/OOM command not allowed.*Redis is full: free memory, or raise maxmemory/);
      }
    } finally {
      client.disconnect();
      await server.kill();
    }
  });

  // What a failover, a long script or a replication policy answers: the URL and network are fine.
  it("says what to do when Redis is a replica, short of replicas, or busy running a script", async () => {
    const primary = await RedisProcess.start("writable");
    const replica = await RedisProcess.start("replica", { replicaOf: primary });
    const clients = [new IORedis(primary.url), new IORedis(replica.url)];
    const [toPrimary, toReplica] = clients.map((client) => createLocks({ redis: fromIoredis(client!), prefix: uniquePrefix("refused"), timeoutMs: 5_000 }));
    const refusal = async (locks: typeof toPrimary) => (await failure(locks!.tryAcquire("job"))).error;
    try {
      expect((await refusal(toReplica)).message).toMatch(/\(READONLY .*\); this Redis is a replica \(a failover\?\): connect to the primary, or retry\.$/);
      await primary.admin.config("SET", "min-replicas-to-write", "2");
      expect((await refusal(toPrimary)).message).toMatch(/\(NOREPLICAS .*\); Redis refuses writes: check its replicas \(min-replicas-to-write\) or disk\.$/);
      await primary.admin.config("SET", "min-replicas-to-write", "0");
      await primary.admin.config("SET", "busy-reply-threshold", "100");
      // Busy for 3 s, on a connection of its own; the lock set's call lands well inside that.
      const busy = new IORedis(primary.url);
      const spinning = busy.eval("local t = redis.call('TIME')[1] + 3 while tonumber(redis.call('TIME')[1]) < t do end", 0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const error = await refusal(toPrimary);
      await spinning;
      busy.disconnect();
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error.message).toMatch(/\(BUSY .*\); Redis is busy or loading: retry\.$/);
    } finally {
      clients.forEach((client) => client.disconnect());
      await Promise.all([replica.kill(), primary.kill()]);
    }
  });

  it("says that Redis is full when Upstash's database is over its data size", async () => {
    // Upstash's answer once a database holds its plan's size; the message is what is tested.
    const full = async () => {
      throw new Error("ERR DB capacity quota exceeded");
    };
    const { error } = await failure(createLocks({ redis: { evalsha: full, eval: full } }).tryAcquire("job"));
    expect(error.message).toMatch(/Redis is full/);
  });

  it("says to use the standard token when Upstash's read-only one may not run scripts", async () => {
    // A client standing in for Upstash's answer to a read-only token; the message is what is tested.
    const refusing = async () => {
      throw new Error("NOPERM this user has no permissions to run the 'evalsha' command");
    };
    const { error } = await failure(createLocks({ redis: { evalsha: refusing, eval: refusing } }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/read-only/);
  });
});

describe("errors of TCP clients and Redis Cluster say what to fix", () => {
  const owner = "cd".repeat(16);
  /** A client whose every script call fails with `error`; the owner token is in the message, as a client echoing its command would put it. */
  const failingWith = (make: () => Error): RedisClient => {
    const fail = async (_: string, keys: string[], args: string[]) => {
      const error = make();
      error.message += args.includes(owner) ? ` (args: ${args.join(" ")})` : "";
      throw error;
    };
    return { evalsha: fail, eval: fail };
  };
  const acquireWith = (redis: RedisClient) => failure(createLocks({ redis, timeoutMs: 2_000 }).acquire("job", { owner, waitMs: 0 }));
  const RESHARD = /the Cluster was moving a slot or failing over: retry, or let the Cluster client retry longer\.$/;
  const CLUSTER = /this Redis is a Cluster node: use fromIoredis\(new Cluster\(\)\) or fromNodeRedis\(createCluster\(\)\)\.$/;

  it.each([
    ["MOVED", "MOVED 10247 127.0.0.1:7102", CLUSTER],
    ["ASK", "ASK 401 127.0.0.1:7102", CLUSTER],
    ["a Cluster client out of redirections", "Too many Cluster redirections. Last error: ReplyError: MOVED 866 127.0.0.1:7101", RESHARD],
    ["TRYAGAIN", "TRYAGAIN Multiple keys request during rehashing of slot", RESHARD],
    ["CLUSTERDOWN", "CLUSTERDOWN The cluster is down", RESHARD],
    ["ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:6379", /check that Redis is running and reachable at its host and port\.$/],
  ])("%s", async (_, message, hint) => {
    const { error } = await acquireWith(failingWith(() => Object.assign(new Error(message), { name: "ReplyError" })));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toContain(message);
    expect(error.message).toMatch(hint);
    expect(error.message).not.toMatch(/token/);
    expect(error.message).not.toContain(owner);
  });

  it("a closed or unconnected ioredis client (\"Connection is closed.\")", async () => {
    const io = new IORedis({ port: 9, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    io.on("error", () => undefined);
    const redis: RedisClient = {
      evalsha: (sha, keys, args) => io.evalsha(sha, keys.length, ...keys, ...args),
      eval: (text, keys, args) => io.eval(text, keys.length, ...keys, ...args),
    };
    const { error } = await acquireWith(redis);
    expect(error.message).toMatch(/\(Connection is closed\.\); check that Redis is running and reachable at its host and port\.$/);
    io.disconnect();
  });

  it("a node-redis client that is not connected (ClientClosedError)", async () => {
    const client = createClient({ url: "redis://127.0.0.1:9" });
    const redis: RedisClient = {
      evalsha: (sha, keys, args) => client.evalSha(sha, { keys, arguments: args }),
      eval: (text, keys, args) => client.eval(text, { keys, arguments: args }),
    };
    const { error } = await acquireWith(redis);
    expect(error.message).toMatch(/\(The client is closed\); check that Redis is running and reachable at its host and port\.$/);
  });
});
