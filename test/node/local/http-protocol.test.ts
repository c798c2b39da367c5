import { describe, expect, it } from "vitest";
import { inject } from "vitest";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";

const base64 = { "upstash-encoding": "base64" };

describe("authentication", () => {
  it("answers 401 with a JSON error for a missing or wrong token", async () => {
    for (const token of [null, "wrong-token"]) {
      const { status, json } = await rest("/", { body: ["PING"], token });
      expect(status).toBe(401);
      expect(json).toEqual({ error: expect.stringMatching(/WRONGPASS/) });
    }
  });

  it("makes the client throw for a wrong token", async () => {
    const { url } = inject("upstash");
    await expect(localRedis({}, { url, token: "wrong-token" }).get("k")).rejects.toThrow(/WRONGPASS/);
  });

  it("also accepts the token as the _token query parameter", async () => {
    const { token } = inject("upstash");
    const { status, json } = await rest(`/ping?_token=${token}`, { token: null });
    expect(status).toBe(200);
    expect(json).toEqual({ result: "PONG" });
  });
});

describe("request shapes", () => {
  it("runs one JSON command with POST / and answers {result}", async () => {
    const k = key("single");
    expect(await rest("/", { body: ["SET", k, "v"] })).toMatchObject({ status: 200, json: { result: "OK" } });
    expect(await rest("/", { body: ["GET", k] })).toMatchObject({ status: 200, json: { result: "v" } });
  });

  it("refuses a request over 10 MB, as Upstash's Free and pay-as-you-go plans do", async () => {
    const k = key("big");
    const { status, json } = await rest("/", { body: ["SET", k, "x".repeat(10 * 1024 * 1024)] });
    expect(status).toBe(413);
    expect(json).toEqual({ error: expect.stringMatching(/max request size exceeded/) });
    expect(await rest("/", { body: ["EXISTS", k] })).toMatchObject({ json: { result: 0 } });
  });

  // Upstash's limit bounds replies too (its docs: reading a structure that grew past it "with a
  // single request" throws): so does this server's, or a read would pass here and fail there.
  it("refuses a reply over 10 MB, as Upstash does, for a value that grew past the limit", async () => {
    const k = key("big-reply");
    for (let i = 0; i < 2; i++) await rest("/", { body: ["APPEND", k, "a".repeat(6 * 1024 * 1024)] });
    expect((await rest("/", { body: ["STRLEN", k] })).json).toEqual({ result: 12 * 1024 * 1024 });
    const { status, json } = await rest("/", { body: ["GET", k], headers: base64 });
    expect({ status, json }).toEqual({ status: 400, json: { error: expect.stringMatching(/^ERR max request size exceeded\. Limit: 10485760 bytes/) } });
    await rest("/", { body: ["DEL", k] });
  });

  it("answers 400 {error} for a failing command, never base64-encoded", async () => {
    const { status, json } = await rest("/", { body: ["INCR"], headers: base64 });
    expect(status).toBe(400);
    expect(json).toEqual({ error: "ERR wrong number of arguments for 'incr' command" });
  });

  it("sends JSON numbers and booleans to Redis as their text", async () => {
    const k = key("numbers");
    for (const [value, stored] of [[1e21, "1000000000000000000000"], [0.25, "0.25"], [-7, "-7"], [true, "true"]]) {
      await rest("/", { body: ["SET", k, value] });
      expect((await rest("/", { body: ["GET", k] })).json).toEqual({ result: stored });
    }
  });

  it.each([
    ["a body that is not JSON", "/", "{nope", 400],
    ["a command that is not an array", "/", '{"cmd": "GET"}', 400],
    ["an argument that is an object", "/", '["SET", "k", {"a": 1}]', 400],
    ["a pipeline that is not a list of commands", "/pipeline", '["GET", "k"]', 400],
    ["an empty transaction", "/multi-exec", "[]", 400],
  ])("answers 400 JSON for %s", async (_, path, body, expected) => {
    const { status, json } = await rest(path, { body });
    expect(status).toBe(expected);
    expect(json).toEqual({ error: expect.stringMatching(/^ERR /) });
  });

  it("names a bad argument by kind and position, without echoing it, even when nested too deep to serialize", async () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000); // about 400 KB, under the 10 MB limit
    const cases: Array<[path: string, body: string, position: number]> = [
      ["/", `["SET", "k", ${deep}]`, 2],
      ["/pipeline", `[["PING"], ${deep}]`, 0],
    ];
    for (const [path, body, position] of cases) {
      const { status, json } = await rest(path, { body });
      expect({ status, json }).toEqual({
        status: 400,
        json: { error: `ERR element ${position} of the command is an array: use strings, numbers or booleans` },
      });
    }
  });

  it("answers 405 JSON for a wrong method", async () => {
    expect(await rest("/", { method: "DELETE" })).toMatchObject({ status: 405, json: { error: expect.any(String) } });
    expect(await rest("/pipeline")).toMatchObject({ status: 405, json: { error: expect.any(String) } });
  });

  it("answers 404 JSON for the server-sent-event endpoint it does not serve", async () => {
    const { status, json } = await rest("/monitor", { method: "POST" });
    expect(status).toBe(404);
    expect(json).toEqual({ error: expect.stringMatching(/not served/) });
  });

  it.each([["SUBSCRIBE", "c"], ["MONITOR"], ["SELECT", "1"], ["QUIT"], ["BLPOP", "k", "0"], ["XREAD", "BLOCK", "0",
    "STREAMS", "s", "$"], ["CLIENT", "REPLY", "OFF"], ["HELLO", "3"], ["MULTI"], ["SCRIPT", "DEBUG", "YES"]])(
    "refuses %s with 400 and keeps the shared connection usable",
    async (...command) => {
      const { status, json } = await rest("/", { body: command });
      expect(status).toBe(400);
      expect(json).toEqual({ error: expect.stringMatching(/is not supported by the local Upstash server/) });
      expect((await rest("/", { body: ["PING"] })).json).toEqual({ result: "PONG" });
    },
  );
});

describe("stream reads", () => {
  // BLOCK is an option before STREAMS; after it come key names, and XREADGROUP's group and consumer.
  it("runs XREAD on a key named block, and XREADGROUP for a group named block: neither is a BLOCK option", async () => {
    expect(await rest("/", { body: ["XREAD", "COUNT", "1", "STREAMS", "block", "0"] })).toMatchObject({ status: 200, json: { result: null } });
    const stream = key("xreadgroup");
    await rest("/", { body: ["XGROUP", "CREATE", stream, "block", "0", "MKSTREAM"] });
    const read = await rest("/", { body: ["XREADGROUP", "GROUP", "block", "block", "STREAMS", stream, ">"] });
    expect(read).toMatchObject({ status: 200, json: { result: null } });
    expect((await rest("/", { body: ["XREAD", "BLOCK", "0", "STREAMS", "block", "$"] })).status).toBe(400);
  });

  // Redis takes the options in any order before STREAMS.
  it.each([
    ["XREADGROUP", "BLOCK", "0", "GROUP", "g", "c", "STREAMS", "s", ">"],
    ["XREADGROUP", "COUNT", "1", "BLOCK", "0", "GROUP", "g", "c", "STREAMS", "s", ">"],
    ["xreadgroup", "noack", "block", "0", "group", "g", "c", "streams", "s", ">"],
    ["XREADGROUP", "GROUP", "g", "streams", "BLOCK", "0", "STREAMS", "s", ">"],
    ["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "$"],
  ])("refuses %s with BLOCK wherever it stands among the options", async (...command) => {
    expect((await rest("/", { body: command })).json).toEqual({ error: expect.stringMatching(/blocking commands would stall/) });
  });
});

describe("command names", () => {
  // "ſ" upper-cases to S and "ı" to I: checked as they came, these would reach Redis as SELECT, MULTI, SUBSCRIBE.
  it.each([["ſelect", "1"], ["multı"], ["ſubſcribe", "c"], ["confıg", "GET", "bind"]])(
    "refuses %s, a name outside ASCII, with 400 and runs nothing",
    async (...command) => {
      const { status, json } = await rest("/", { body: command });
      expect({ status, json }).toEqual({ status: 400, json: { error: "ERR unknown command: command names are ASCII" } });
      const k = key("ascii");
      expect((await rest("/", { body: ["SET", k, "v"] })).json).toEqual({ result: "OK" });
      expect((await rest("/", { body: ["GET", k] })).json).toEqual({ result: "v" });
    },
  );

  it("refuses one in the path form too", async () => {
    expect(await rest("/%C5%BFelect/1")).toMatchObject({ status: 400, json: { error: expect.stringMatching(/ASCII/) } });
  });
});

describe("response encoding", () => {
  const bytes = "return {'\\255\\254', 'x'}"; // two bytes that are not valid UTF-8

  it("base64-encodes every string at every depth, keeping integers, null and a top-level OK", async () => {
    const k = key("b64");
    expect((await rest("/", { body: ["SET", k, "bar"], headers: base64 })).json).toEqual({ result: "OK" });
    expect((await rest("/", { body: ["GET", k], headers: base64 })).json).toEqual({ result: "YmFy" });
    const script = "return {redis.status_reply('OK'), 3, {'é'}, redis.call('GET', KEYS[1])}";
    const nested = await rest("/", { body: ["EVAL", script, 1, key("none")], headers: base64 });
    expect(nested.json).toEqual({ result: ["T0s=", 3, ["w6k="], null] });
    expect((await rest("/", { body: ["EVAL", bytes, 0], headers: base64 })).json).toEqual({ result: ["//4=", "eA=="] });
    expect((await rest("/", { body: ["GET", key("none")], headers: base64 })).json).toEqual({ result: null });
  });

  it("writes integers with their exact digits, past 2^53 too, and never base64-encodes them", async () => {
    const k = key("int64");
    await rest("/", { body: ["SET", k, "9223372036854775805"] });
    const { url, token } = inject("upstash");
    for (const headers of [{}, base64]) {
      const response = await fetch(`${url}/pipeline`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, ...headers },
        body: JSON.stringify([["INCR", k], ["INCRBY", k, -1], ["STRLEN", k]]),
      });
      expect(await response.text()).toBe(
        '[{"result":9223372036854775806},{"result":9223372036854775805},{"result":19}]',
      );
    }
  });

  it("sends plain strings without the header, invalid UTF-8 as U+FFFD", async () => {
    expect((await rest("/", { body: ["EVAL", bytes, 0] })).json).toEqual({ result: ["\ufffd\ufffd", "x"] });
    expect((await rest("/", { body: ["ECHO", "é"] })).json).toEqual({ result: "é" });
  });
});

describe("upstash-sync-token", () => {
  it("comes with every response, and the client keeps it for read-your-writes", async () => {
    const first = await rest("/", { body: ["PING"] });
    const refused = await rest("/", { body: ["PING"], token: null });
    for (const response of [first, refused]) expect(response.headers.get("upstash-sync-token")).toMatch(/\S/);
    const redis = localRedis();
    await redis.set(key("sync"), 1);
    expect(redis.readYourWritesSyncToken).toMatch(/\S/);
  });
});
