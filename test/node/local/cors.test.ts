import { describe, expect, inject, it } from "vitest";
import { key, rest } from "../../support/rest.ts";
import { openRaw } from "./sse-client.ts";

const origin = "http://localhost:5173";

describe("browsers (CORS), as Upstash allows for client-side apps", () => {
  it("answers a preflight with 204 and the methods and headers the request asked for, without a token", async () => {
    const { url } = inject("upstash");
    const preflight = await fetch(`${url}/pipeline`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,upstash-encoding",
      },
    });
    expect(preflight.status).toBe(204);
    expect(Object.fromEntries(preflight.headers)).toMatchObject({
      "access-control-allow-origin": "*",
      "access-control-allow-methods": expect.stringContaining("POST"),
      "access-control-allow-headers": "authorization,content-type,upstash-encoding",
    });
  });

  it("allows any origin on every response, refusals and event streams included, and exposes upstash-sync-token", async () => {
    const answered = [
      (await rest("/", { body: ["PING"], headers: { origin } })).headers,
      (await rest("/", { body: ["PING"], token: "wrong-token", headers: { origin } })).headers,
    ];
    const stream = await openRaw(`/subscribe/${encodeURIComponent(key("cors"))}`, { headers: { origin } });
    answered.push(stream.response.headers);
    stream.abort();
    for (const headers of answered) {
      expect(headers.get("access-control-allow-origin")).toBe("*");
      expect(headers.get("access-control-expose-headers")).toBe("upstash-sync-token");
    }
  });
});
