import { describe, expect, it } from "vitest";
import { key } from "../../support/rest.ts";
import { localRedis } from "../../support/local-client.ts";

// Every case runs with the client's default base64 responses and with plain JSON strings.
describe.each([
  { encoding: "base64", redis: localRedis() },
  { encoding: "plain", redis: localRedis({ responseEncoding: false }) },
])("@upstash/redis data types over the local server ($encoding)", ({ redis }) => {
  it("round-trips unicode, control characters and JSON values", async () => {
    const text = "héllo wörld ✓ 🚀 中文";
    const controls = "a\u0000b\u0001\n\t\"\\ end";
    const [k1, k2, k3] = [key("s1"), key("s2"), key("s3")];
    expect(await redis.set(k1, text)).toBe("OK");
    await redis.set(k2, controls);
    await redis.set(k3, { nested: [1, "two", null], ok: true });
    expect(await redis.get(k1)).toBe(text);
    expect(await redis.get(k2)).toBe(controls);
    expect(await redis.get(k3)).toEqual({ nested: [1, "two", null], ok: true });
    expect(await redis.strlen(k1)).toBe(Buffer.byteLength(text));
    expect(await redis.get(key("missing"))).toBeNull();
    expect(await redis.mget(k1, key("missing"))).toEqual([text, null]);
  });

  it("keeps a stored string that is literally OK, at the top level and nested", async () => {
    const k = key("ok");
    await redis.set(k, "OK");
    expect(await redis.get(k)).toBe("OK");
    expect(await redis.mget(k, k)).toEqual(["OK", "OK"]);
  });

  it("does integer and float arithmetic", async () => {
    const k = key("n");
    expect(await redis.incr(k)).toBe(1);
    expect(await redis.incrby(k, 41)).toBe(42);
    expect(await redis.decrby(k, 50)).toBe(-8);
    expect(await redis.incrbyfloat(k, 0.5)).toBe(-7.5);
    const big = key("big");
    expect(await redis.set(big, 2 ** 52)).toBe("OK");
    expect(await redis.incr(big)).toBe(2 ** 52 + 1);
  });

  it("reads an integer past 2^53 as JSON.parse reads Upstash's exact digits (INCRBY at 2^63-1)", async () => {
    const k = key("int64");
    await redis.set(k, "9223372036854775807");
    expect(await redis.incrby(k, 0)).toBe(JSON.parse("9223372036854775807"));
  });

  it("sets options such as PX and NX", async () => {
    const k = key("px");
    expect(await redis.set(k, "v", { px: 60_000, nx: true })).toBe("OK");
    expect(await redis.set(k, "w", { nx: true })).toBeNull();
    const ttl = await redis.pttl(k);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("handles hashes", async () => {
    const k = key("h");
    expect(await redis.hset(k, { name: "Ada", age: 36, tags: ["x"] })).toBe(3);
    expect(await redis.hget(k, "name")).toBe("Ada");
    expect(await redis.hincrby(k, "age", 1)).toBe(37);
    expect(await redis.hgetall(k)).toEqual({ name: "Ada", age: 37, tags: ["x"] });
    expect(await redis.hdel(k, "tags")).toBe(1);
    expect((await redis.hkeys(k)).sort()).toEqual(["age", "name"]);
  });

  it("handles lists", async () => {
    const k = key("l");
    expect(await redis.rpush(k, "b", "c")).toBe(2);
    expect(await redis.lpush(k, "a")).toBe(3);
    expect(await redis.lrange(k, 0, -1)).toEqual(["a", "b", "c"]);
    expect(await redis.lpop(k)).toBe("a");
    expect(await redis.llen(k)).toBe(2);
  });

  it("handles sets", async () => {
    const k = key("set");
    expect(await redis.sadd(k, "x", "y", "z")).toBe(3);
    expect(await redis.sadd(k, "x")).toBe(0);
    expect(await redis.sismember(k, "y")).toBe(1);
    expect((await redis.smembers(k)).sort()).toEqual(["x", "y", "z"]);
    expect(await redis.scard(k)).toBe(3);
  });

  it("handles sorted sets with scores", async () => {
    const k = key("z");
    expect(await redis.zadd(k, { score: 2, member: "b" }, { score: 1.5, member: "a" })).toBe(2);
    expect(await redis.zrange(k, 0, -1, { withScores: true })).toEqual(["a", 1.5, "b", 2]);
    expect(await redis.zincrby(k, 10, "a")).toBe(11.5);
    expect(await redis.zscore(k, "a")).toBe(11.5);
    expect(await redis.zrank(k, "a")).toBe(1);
  });

  it("reports command errors with Redis' message", async () => {
    const k = key("wrongtype");
    await redis.set(k, "text");
    await expect(redis.lpush(k, "x")).rejects.toThrow(/WRONGTYPE/);
    await expect(redis.incr(k)).rejects.toThrow(/not an integer/);
  });
});
