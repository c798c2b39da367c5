import { describe, expect, inject, it } from "vitest";
import { parseTarget } from "../../../src/local/request-target.ts";
import { key, rest } from "../../support/rest.ts";

const base64 = { "upstash-encoding": "base64" };

describe("the path form: /<command>/<arg>/...", () => {
  it("serves the path form, with query parameters and a POST body as extra arguments", async () => {
    const [k, j] = [key("path"), key("posted")];
    expect((await rest(`/set/${encodeURIComponent(k)}/a%20b?EX=100`)).json).toEqual({ result: "OK" });
    expect((await rest(`/get/${encodeURIComponent(k)}`)).json).toEqual({ result: "a b" });
    expect((await rest(`/ttl/${encodeURIComponent(k)}`)).json).toEqual({ result: 100 });
    await rest(`/set/${encodeURIComponent(j)}`, { method: "POST", body: '{"raw": "json"}' });
    expect((await rest(`/get/${encodeURIComponent(j)}`)).json).toEqual({ result: '{"raw": "json"}' });
  });

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
    expect((await rest("/", { body: ["GET", k], headers: base64 })).json).toEqual({ result: "/wD+QQ==" });
  });

  it("takes percent-encoded bytes that are not UTF-8 in a path segment as those bytes", async () => {
    const k = key("binary-path");
    const { status, json } = await rest(`/set/${encodeURIComponent(k)}/%FF%00%FE`);
    expect({ status, json }).toEqual({ status: 200, json: { result: "OK" } });
    expect((await rest("/", { body: ["GET", k], headers: base64 })).json).toEqual({ result: "/wD+" });
  });

  it("answers 400 JSON for a malformed percent escape", async () => {
    const { status, json } = await rest(`/set/${encodeURIComponent(key("bad-escape"))}/100%`);
    expect({ status, json }).toEqual({ status: 400, json: { error: "ERR malformed URL segment 100%" } });
  });

  it("never runs another command when the path starts with //", async () => {
    const victim = key("victim");
    await rest("/", { body: ["SET", victim, "precious"] });
    // URL parsing would read "//get/del/<victim>" as host "get", path "/del/<victim>".
    const { status, json } = await rest(`//get/del/${encodeURIComponent(victim)}`);
    expect({ status, json }).toEqual({ status: 400, json: { error: "ERR empty command name" } });
    expect((await rest("/", { body: ["GET", victim] })).json).toEqual({ result: "precious" });
  });

  // Parsed before the token is checked, so anyone can send it: a long inner run of slashes once
  // cost quadratic time to strip trailing slashes from (a quarter second at 15 KB).
  it("drops trailing slashes, and parses a long run of inner slashes at once", () => {
    expect(parseTarget("/get/k///?a=1").path).toBe("/get/k");
    const started = performance.now();
    expect(parseTarget(`/get${"/".repeat(150_000)}k`).path).toMatch(/^\/get\/+k$/);
    // Quadratic, this length would take about 25 s; linear, a busy machine stays far below the bound.
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("answers 400 JSON for the path //, whose command name is empty", async () => {
    const { status, json } = await rest("//", { body: ["PING"] });
    expect({ status, json }).toEqual({ status: 400, json: { error: "ERR empty command name" } });
  });
});
