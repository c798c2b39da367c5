import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { localRedis } from "../../support/local-client.ts";
import { key } from "../../support/rest.ts";

const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");
/** Script text no other test has loaded, so the script cache starts without it. */
const fresh = (body: string) => `-- ${crypto.randomUUID()}\n${body}`;

describe.each([
  { encoding: "base64", redis: localRedis() },
  { encoding: "plain", redis: localRedis({ responseEncoding: false }) },
])("Lua scripts through the local server ($encoding)", ({ redis }) => {
  it("EVAL passes KEYS and ARGV and returns integers and strings", async () => {
    const k = key("eval");
    const script = "redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('STRLEN', KEYS[1]), ARGV[2]}";
    expect(await redis.eval(script, [k], ["héllo", "second"])).toEqual([6, "second"]);
    expect(await redis.get(k)).toBe("héllo");
  });

  it("returns nested arrays, nil and status replies at every depth", async () => {
    const script = `return {
      redis.status_reply('OK'), 7, 'OK',
      {redis.status_reply('OK'), 'inner', {redis.status_reply('PONG'), 'deep'}},
      redis.call('GET', KEYS[1])
    }`;
    // GET of a missing key gives Lua false, which Redis replies as nil.
    expect(await redis.eval(script, [key("absent")], [])).toEqual([
      "OK", 7, "OK", ["OK", "inner", ["PONG", "deep"]], null,
    ]);
    expect(await redis.eval("return redis.status_reply('OK')", [], [])).toBe("OK");
    expect(await redis.eval("return redis.status_reply('QUEUED')", [], [])).toBe("QUEUED");
    expect(await redis.eval("return nil", [], [])).toBeNull();
  });

  it("SCRIPT LOAD returns the SHA-1 of the text and EVALSHA runs it", async () => {
    const script = fresh("return ARGV[1] .. '!'");
    const sha = await redis.scriptLoad(script);
    expect(sha).toBe(sha1(script));
    expect(await redis.evalsha(sha, [], ["hey"])).toBe("hey!");
    expect(await redis.scriptExists(sha)).toEqual([1]);
  });

  it("EVALSHA of an unknown script fails with NOSCRIPT", async () => {
    await expect(redis.evalsha(sha1(fresh("return 1")), [], [])).rejects.toThrow(/NOSCRIPT/);
  });

  it("createScript falls back from EVALSHA to EVAL on NOSCRIPT, which caches the script", async () => {
    const text = fresh("return tonumber(ARGV[1]) * 2");
    expect(await redis.scriptExists(sha1(text))).toEqual([0]);
    const script = redis.createScript<number>(text);
    expect(await script.exec([], ["21"])).toBe(42);
    expect(await redis.scriptExists(sha1(text))).toEqual([1]);
    expect(await script.exec([], ["5"])).toBe(10);
  });

  it("reports a script error with its message", async () => {
    await expect(redis.eval("return redis.error_reply('FENCE stale token')", [], [])).rejects.toThrow(
      /FENCE stale token/,
    );
    await expect(redis.eval("this is not lua", [], [])).rejects.toThrow(/ERR/);
  });
});
