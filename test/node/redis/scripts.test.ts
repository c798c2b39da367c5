import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatedPath, minifyLua, renderScripts, replyLength } from "../../../scripts/gen-scripts.ts";
import { createLocks, type Lease } from "../../../src/index.ts";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";
import { newToken } from "../../../src/core/keys.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { counting, withFetch } from "../../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

const all: scripts.LuaScript[] = Object.values(scripts);

describe("generated scripts", () => {
  it("are up to date with lua/ (run `npm run gen` if this fails)", () => {
    expect(readFileSync(generatedPath, "utf8")).toBe(renderScripts());
  });

  // The client refuses a reply of any other length rather than read what it lacks as zeros.
  it("know how many integers each lock script answers, counted from its returns", () => {
    expect(Object.fromEntries(all.map((s) => [s.name, s.replyLength]))).toEqual({
      acquire: 4, adopt: 2, heartbeat: 3, inspect: 5, leave: 1, release: 2, "store-fence": undefined, "store-ttl": 1,
    });
    expect(replyLength("local a=1 if a then return{0,a,f(1,2),{3,4}}end return{1,'x,y',2,3}")).toBe(4);
    expect(replyLength("if x then return{0}end return{1,2}")).toBeUndefined();
  });

  it.each(all.map((s) => [s.name, s] as const))("%s: the SHA-1 EVALSHA uses is the one SCRIPT LOAD returns", async (_, script) => {
    expect(scriptSha1(script)).toBe(await upstash().scriptLoad(script.text));
  });
});

describe("minifyLua", () => {
  it("renames locals and parameters, calls redis.call through a local, and keeps strings, fields and globals", () => {
    const source = [
      "-- a comment",
      "local fence, a = ARGV[1], KEYS[1]",
      "local function waitInLine(ttl)",
      "  return {0, ttl}",
      "end",
      "redis.call('HSET', a, 'fence', fence)",
      "local ttl = redis.call('PTTL', a)",
      "return 'q:' .. fence .. waitInLine(ttl)[2]",
    ].join("\n");
    // Lines are joined by a space, except after `)`, `]` and `}`, where a name needs none.
    expect(minifyLua(source)).toBe(
      "local a=redis.call local b,c=ARGV[1],KEYS[1]local function d(e)return{0,e}end " +
        "a('HSET',c,'fence',b)local e=a('PTTL',c)return 'q:'..b..d(e)[2]",
    );
  });

  it("refuses what would change meaning once lines are joined: a comment after code, a line opening with (", () => {
    expect(() => minifyLua("local a = 1 -- one\nreturn a")).toThrow(/comments on lines of their own/);
    expect(minifyLua("return '--'")).toBe("local a=redis.call return '--'");
    expect(() => minifyLua("local f = g\n(f)()")).toThrow(/do not start a line with \(/);
  });

  it("runs the renamed script the same as the source on the real server", async () => {
    const source = [
      "local count = tonumber(ARGV[1])",
      "local function twice(n) return n * 2 end",
      "redis.call('SET', KEYS[1], 'x' .. count)",
      "return {twice(count), 'count' .. 1, redis.call('GET', KEYS[1])}",
    ].join("\n");
    const key = `${uniquePrefix("minify")}:k`;
    expect(await upstash().eval(minifyLua(source), [key], ["21"])).toEqual([42, "count1", "x21"]);
  });
});

describe("requests per operation", () => {
  // Its own server: the flush below would cost other test files a request, and their loads would warm this cache.
  let local: LocalUpstash;
  beforeAll(async () => void (local = await startLocalUpstash()));
  afterAll(() => local?.close());

  it("is one HTTP request per operation with a warm script cache, two when cold", async () => {
    const redis = new Redis({ url: local.url, token: local.token, enableTelemetry: false });
    const locks = createLocks({ redis, prefix: uniquePrefix("requests") });
    const count = { n: 0 };
    const requestsFor = async (op: () => Promise<unknown>) => {
      count.n = 0;
      await withFetch(counting(count), op);
      return count.n;
    };
    await redis.scriptFlush();
    const cold = await requestsFor(() => locks.acquire("warmup"));
    expect(cold).toBe(2); // EVALSHA -> NOSCRIPT, then EVAL

    for (const script of all) await redis.scriptLoad(script.text);
    let lease: Lease | undefined;
    expect(await requestsFor(async () => (lease = await locks.acquire("order:1")))).toBe(1);
    const held = lease as unknown as Lease;
    expect(await requestsFor(() => held.heartbeat())).toBe(1);
    expect(await requestsFor(() => locks.inspect("order:1"))).toBe(1);
    expect(await requestsFor(() => held.release())).toBe(1);
  });
});

describe("a script called with too few keys", () => {
  it("release.lua without the release record's key fails before it changes anything", async () => {
    const prefix = uniquePrefix("four-keys");
    const locks = createLocks({ redis: upstash(), prefix });
    const lease = await locks.acquire("job");
    // The lock's four keys, as every other script takes them, without KEYS[5].
    const keys = Object.values(lockKeys(prefix, "job"));
    const release = () => upstash().eval(scripts.release.text, keys, [lease.owner, String(lease.fence), newToken(), "60000"]);
    // Redis' wording of the error varies by version; what matters is that nothing changed, for the
    // last hold and for one of several.
    await expect(release()).rejects.toThrow();
    expect(await locks.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    const joined = await locks.acquire("job", { owner: lease.owner });
    await expect(release()).rejects.toThrow();
    expect(await locks.inspect("job")).toMatchObject({ held: true, fence: lease.fence, holds: 2 });
    expect(await joined.release()).toBe("released");
    expect(await lease.release()).toBe("released");
  });
});
