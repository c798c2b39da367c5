import { describe, expect, it } from "vitest";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";

const redis = localRedis();

describe("pipelines", () => {
  it("runs every command and keeps a failing one's error in place (keepErrors)", async () => {
    const k = key("pipe");
    const results = await redis.pipeline().set(k, "text").incr(k).get(k).hset(k, { f: 1 }).exec({ keepErrors: true });
    expect(results.map((entry) => entry.result)).toEqual(["OK", undefined, "text", undefined]);
    expect(results[1]?.error).toMatch(/not an integer/);
    expect(results[3]?.error).toMatch(/WRONGTYPE/);
    expect(await redis.get(k)).toBe("text");
  });

  it("throws for the failing command without keepErrors, after the others ran", async () => {
    const [a, b] = [key("a"), key("b")];
    await expect(redis.pipeline().set(a, 1).lpush(a, "x").set(b, 2).exec()).rejects.toThrow(
      /Command 2 \[ lpush \] failed: WRONGTYPE/,
    );
    expect(await redis.mget(a, b)).toEqual([1, 2]);
  });

  it("answers HTTP 200 with one result or error entry per command", async () => {
    const k = key("raw");
    const { status, json } = await rest("/pipeline", { body: [["SET", k, 5], ["INCRBY", k, 10], ["GET"]] });
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "OK" },
      { result: 15 },
      { error: "ERR wrong number of arguments for 'get' command" },
    ]);
  });

  it("rejects a refused command in its own entry and still runs the rest", async () => {
    const k = key("refused");
    const { status, json } = await rest("/pipeline", { body: [["SET", k, "v"], ["BLPOP", k, 0], ["GET", k]] });
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "OK" },
      { error: expect.stringMatching(/^ERR 'blpop' is not supported.*blocking/) },
      { result: "v" },
    ]);
  });
});

describe("transactions (/multi-exec)", () => {
  it("runs atomically and returns every reply, including hash replies", async () => {
    const [k, h] = [key("tx"), key("txh")];
    const results = await redis.multi().set(k, 1).incr(k).hset(h, { a: 1, b: "two" }).hgetall(h).get(k).exec();
    expect(results).toEqual(["OK", 2, 2, { a: 1, b: "two" }, 2]);
  });

  it("keeps going after a command fails inside EXEC, reporting that entry's error", async () => {
    const k = key("exec-error");
    const { status, json } = await rest("/multi-exec", {
      body: [["SET", k, "text"], ["INCR", k], ["APPEND", k, "!"]],
    });
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "OK" },
      { error: "ERR value is not an integer or out of range" },
      { result: 5 },
    ]);
    await expect(redis.multi().set(k, "x").incr(k).exec()).rejects.toThrow(/Command 2 \[ incr \] failed/);
  });

  it("discards the whole transaction when a command cannot be queued (EXECABORT, HTTP 400)", async () => {
    const k = key("aborted");
    const { status, json } = await rest("/multi-exec", { body: [["SET", k, "1"], ["GET"], ["SET", k, "2"]] });
    expect(status).toBe(400);
    expect(json).toEqual({
      error: "EXECABORT Transaction discarded because of previous errors: ERR wrong number of arguments for 'get' command",
    });
    expect(await redis.exists(k)).toBe(0);
    await expect(redis.multi().set(k, 1).exec()).resolves.toEqual(["OK"]);
  });

  it("refuses a transaction containing a command the server does not support, running none of it", async () => {
    const k = key("refused-tx");
    const { status, json } = await rest("/multi-exec", { body: [["SET", k, "1"], ["WATCH", k]] });
    expect(status).toBe(400);
    expect(json).toEqual({ error: expect.stringMatching(/^ERR 'watch' is not supported/) });
    expect(await redis.exists(k)).toBe(0);
  });

  it("never interleaves concurrent transactions, even with plain commands racing them", async () => {
    const counter = key("counter");
    const steps = 8;
    const transaction = () => rest("/multi-exec", { body: Array.from({ length: steps }, () => ["INCR", counter]) });
    const racing = Array.from({ length: 100 }, () => redis.incr(counter));
    const responses = await Promise.all(Array.from({ length: 40 }, transaction));
    await Promise.all(racing);
    for (const { status, json } of responses) {
      expect(status).toBe(200);
      const values = (json as Array<{ result: number }>).map((entry) => entry.result);
      // Inside one transaction the increments are consecutive: nothing ran in between.
      expect(values).toEqual(Array.from({ length: steps }, (_, i) => (values[0] ?? 0) + i));
    }
    expect(await redis.get(counter)).toBe(40 * steps + 100);
  });
});
