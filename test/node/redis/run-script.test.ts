import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFencedStore, createLocks, LockTimeoutError, LockUnavailableError, type RedisClient } from "../../../src/index.ts";
import { delayingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { garbling } from "../../support/garbling-client.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

/** A server that accepts requests and never answers: a Redis endpoint that hangs. */
let silent: Server;
let silentUrl: string;
beforeAll(async () => {
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(() => {
  silent.closeAllConnections();
  silent.close();
});

function locksAt(url: string, token: string, retry?: { retries: number }) {
  const redis = new Redis({ url, token, enableTelemetry: false, ...(retry ? { retry } : {}) });
  return createLocks({ redis, prefix: uniquePrefix("down"), timeoutMs: 1_000 });
}

async function failure(promise: Promise<unknown>) {
  const started = performance.now();
  const error = await promise.then(() => new Error("expected a failure"), (e: unknown) => e);
  return { error: error as Error, ms: performance.now() - started };
}

describe("the Redis client", () => {
  // Type-checked by `npm test` too: a wrapper typed as fencelock calls it must fit, not only a generic one.
  it("may be any object whose evalsha and eval take string arguments, such as a logging wrapper", async () => {
    const redis = upstash();
    const calls: string[] = [];
    const wrapper = {
      evalsha: (sha1: string, keys: string[], args: string[]): Promise<unknown> => (calls.push("evalsha"), redis.evalsha(sha1, keys, args)),
      eval: (script: string, keys: string[], args: string[]): Promise<unknown> => (calls.push("eval"), redis.eval(script, keys, args)),
    };
    const locks = createLocks({ redis: wrapper, prefix: uniquePrefix("wrapper") });
    expect(await (await locks.acquire("job")).release()).toBe("released");
    expect(calls.filter((call) => call === "evalsha")).toHaveLength(2);
  });
});

describe("a Redis that is down or slow", () => {
  it("reports a refused connection as LockUnavailableError, not as busy, and fast", async () => {
    const locks = locksAt("http://127.0.0.1:9", "token", { retries: 0 });
    const { error, ms } = await failure(locks.acquire("job", { waitMs: 5_000 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).not.toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: "LOCK_UNAVAILABLE" });
    expect(error.message).toMatch(/check the Redis URL/);
    expect(ms).toBeLessThan(1_000);
  });

  it("does not wait out the client's hidden retries: timeoutMs bounds each request", async () => {
    const locks = locksAt("http://127.0.0.1:9", "token"); // default: 5 retries over ~4 s
    const { error, ms } = await failure(locks.tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(ms).toBeLessThan(2_000);
  });

  it("reports a hanging endpoint after timeoutMs", async () => {
    const { error, ms } = await failure(locksAt(silentUrl, "token").tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/acquire failed \(no answer within 1000ms, timeoutMs\); check the Redis URL, token and network\./);
    expect(ms).toBeGreaterThanOrEqual(950);
    expect(ms).toBeLessThan(3_000);
  });

  it("gives back a lock taken by an attempt whose reply came after timeoutMs", async () => {
    const prefix = uniquePrefix("late-reply");
    const locks = createLocks({ redis: upstash(), prefix, timeoutMs: 200 });
    await (await locks.tryAcquire("warm"))?.release(); // the script is loaded: one request applies it
    // Redis applies the attempt at once; its reply arrives after the caller gave up on it.
    const { error } = await failure(withFetch(delayingResponses(600, 1), () => locks.tryAcquire("job")));
    expect(error).toBeInstanceOf(LockUnavailableError);
    // Not held for the 10 s lease by a caller that never got it.
    await until(async () => !(await locks.inspect("job")).held, 2_000);
    expect((await locks.tryAcquire("job"))?.fence).toBeGreaterThan(0);
  });

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

  it("says the database's request quota is used up, not that Redis is unreachable", async () => {
    // Upstash's answer once a plan's requests are spent; the message is what is tested.
    const spent = async () => {
      throw new Error("ERR max daily request limit exceeded. Limit: 10000, Usage: 10000, command was: [[\"evalsha\"]]");
    };
    const { error } = await failure(createLocks({ redis: { evalsha: spent, eval: spent } }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/limit exceeded.*the database's request quota is used up: see its plan in the Upstash console/);
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

describe("a reply that is not one of our scripts' is LockUnavailableError, never read as a lock state", () => {
  const held = async (reply: unknown) => {
    const garbage: { reply?: unknown } = {};
    const prefix = uniquePrefix("garbage");
    const locks = createLocks({ redis: garbling(garbage), prefix });
    const lease = await locks.acquire("held");
    garbage.reply = reply;
    return { locks, lease, observer: createLocks({ redis: upstash(), prefix }) };
  };

  it.each([[[]], [[1]], [[0, 5, -1, 7, 1, 2, 3]], [[1, 2, 3, 4, 5, 6]], [[1, 0.5]]])("%j: not busy, lost, expired or free", async (reply) => {
    const { locks, lease, observer } = await held(reply);
    // Redis ran each of these: the lock taken, the lease extended, still held, then released.
    expect((await failure(locks.tryAcquire("free"))).error).toBeInstanceOf(LockUnavailableError);
    expect((await failure(lease.heartbeat())).error).toBeInstanceOf(LockUnavailableError);
    expect(lease.remainingMs()).toBeGreaterThan(0);
    expect((await failure(locks.inspect("held"))).error).toBeInstanceOf(LockUnavailableError);
    expect((await failure(lease.release())).error).toBeInstanceOf(LockUnavailableError);
    expect((await observer.inspect("held")).held).toBe(false);
  });

  it("refuses a fence no lease could have, from data under the prefix that is not fencelock's", async () => {
    const prefix = uniquePrefix("foreign-fence");
    const locks = createLocks({ redis: upstash(), prefix });
    const owner = "e".repeat(32);
    await upstash().hset(`${prefix}:{job}:lock`, { owner, fence: "-5", holds: 1 });
    await upstash().pexpire(`${prefix}:{job}:lock`, 10_000);
    const { error } = await failure(locks.acquire("job", { owner, waitMs: 0 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/acquire failed \(an unexpected reply \[1,-5,\d,\d+\]\); check the Redis URL, token and network; a lock it took is given back\./);
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

describe("an unexpected reply says what it was, and what likely sent it", () => {
  const replying = (reply: unknown): RedisClient => ({ evalsha: async () => reply, eval: async () => reply });
  const owner = "ef".repeat(16);

  it.each([
    ["integers as text (ioredis' stringNumbers)", ["1", "5", "1", "1000"], /\(an unexpected reply \[1,5,1,1000\]\); integers came as text: use fromIoredis or fromNodeRedis; a lock it took is given back\.$/],
    ["integers as bigint", [1n, 5n, 1n, 1000n], /\[1,5,1,1000\]\); integers came as text: use fromIoredis or fromNodeRedis;/],
    ["an empty array", [], /\(an unexpected reply \[\]\); check the Redis URL, token and network; a lock it took is given back\.$/],
    ["OK", "OK", /\(an unexpected reply OK\); check the Redis URL, token and network; a lock it took is given back\.$/],
    ["an echo of the owner token", ["1", owner], /\(an unexpected reply \[1,…\]\); check the Redis URL/],
    ["a null-prototype object", Object.create(null), /\(an unexpected reply\); check the Redis URL/],
  ])("%s", async (_, reply, message) => {
    const { error } = await failure(createLocks({ redis: replying(reply) }).tryAcquire("job", { owner }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain(owner);
  });

  it("does not say a lock was given back for other scripts", async () => {
    const { error } = await failure(createLocks({ redis: replying([]) }).inspect("job"));
    expect(error.message).toMatch(/inspect failed \(an unexpected reply \[\]\); check the Redis URL, token and network\.$/);
  });
});
