// Review s10 of fencelock/local: each test shows one difference from Upstash or one robustness
// problem, against the real redis-server started by the global setup (or a private one).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { Redis as IORedis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import { startLocalUpstash, startRedisServer, type LocalUpstash } from "../../../src/local/index.ts";
import { freePort } from "../../../src/local/free-port.ts";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";

const base64 = { "upstash-encoding": "base64" };

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function privateServer(redisUrl?: string): Promise<LocalUpstash> {
  const local = await startLocalUpstash(redisUrl === undefined ? {} : { redisUrl });
  cleanup.push(() => local.close());
  return local;
}

/** A Lua script that keeps Redis busy for `ms`, then sets KEYS[1] and returns "finished". */
function busyScript(ms: number): string {
  return "local t=redis.call('TIME') local s=t[1]*1000000+t[2] " +
    `repeat local n=redis.call('TIME') until (n[1]*1000000+n[2])-s > ${ms * 1000} ` +
    "redis.call('SET', KEYS[1], 'done') return 'finished'";
}

describe("review s10: path commands", () => {
  it("stores a binary POST body byte for byte, as Upstash's 'JSON or Binary Value' form does", async () => {
    const k = key("binary-body");
    const bytes = new Uint8Array([0xff, 0x00, 0xfe, 0x41]);
    const { url, token } = inject("upstash");
    const posted = await fetch(`${url}/set/${encodeURIComponent(k)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: bytes,
    });
    expect(posted.status).toBe(200);
    expect((await rest("/", { body: ["STRLEN", k] })).json).toEqual({ result: 4 });
    expect((await rest("/", { body: ["GET", k], headers: base64 })).json).toEqual({
      result: Buffer.from(bytes).toString("base64"),
    });
  });

  it("takes percent-encoded bytes that are not UTF-8 in a path segment as those bytes", async () => {
    const k = key("binary-path");
    const { status, json } = await rest(`/set/${encodeURIComponent(k)}/%FF%00%FE`);
    expect({ status, json }).toEqual({ status: 200, json: { result: "OK" } });
    expect((await rest("/", { body: ["GET", k], headers: base64 })).json).toEqual({ result: "/wD+" });
  });
});
