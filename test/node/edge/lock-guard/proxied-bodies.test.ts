// A guarded route that proxies an upstream: its body passes on whole, and the lock is let go.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { lockGuard, type LockVariables } from "../../../../src/hono.ts";
import { guardFetch } from "../../../../src/edge/guard-fetch.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { gzipUpstream } from "../../../support/gzip-upstream.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("lockGuard", () => {
  // A proxy: the upstream's Content-Length is passed on, and its fetch carries lease.signal, which
  // the release aborts. The body must still end, with every byte, and the lock be let go.
  for (const withSignal of [true, false]) {
    it(`passes on a proxied body with Content-Length (fetched ${withSignal ? "with" : "without"} lease.signal) to its end`, async () => {
      const upstream = createServer((_request, response) => response.end("helloworld"));
      await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
      const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-proxy") });
      const app = new Hono<{ Variables: LockVariables }>();
      app.get("/report", lockGuard({ locks, name: () => "report" }), (c) => fetch(url, withSignal ? { signal: c.get("lease").signal } : {}));
      try {
        const response = await app.request("/report");
        expect(response.headers.get("Content-Length")).toBe("10");
        expect(await Promise.race([response.text(), sleep(3_000).then(() => "the body never ended")])).toBe("helloworld");
        expect((await locks.inspect("report")).held).toBe(false);
      } finally {
        upstream.close();
      }
    });
  }

  // Its Content-Length counts the gzip; fetch() hands on the decoded body. Counted against it, the
  // guard once ended the body after a fifth of it, and let the lock go early.
  it("passes on the whole body of a compressed upstream, as the same route unguarded does, in lockGuard and guardFetch", async () => {
    const upstream = await gzipUpstream();
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-gzip") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.get("/plain", () => fetch(upstream.url));
    app.get("/guarded", lockGuard({ locks, name: () => "report" }), () => fetch(upstream.url));
    const plainHandler = guardFetch({ locks: () => locks, name: () => "report" }, () => fetch(upstream.url));
    try {
      const lengths = {
        plain: (await (await app.request("/plain")).text()).length,
        lockGuard: (await (await app.request("/guarded")).text()).length,
        guardFetch: (await (await plainHandler(new Request("http://x/report"), {}, { waitUntil: () => undefined })).text()).length,
      };
      expect(lengths).toEqual({ plain: upstream.text.length, lockGuard: upstream.text.length, guardFetch: upstream.text.length });
      expect((await locks.inspect("report")).held).toBe(false);
    } finally {
      upstream.close();
    }
  });

  it("lets a client stop reading a proxied body cleanly when the upstream fetch carries lease.signal", async () => {
    const upstream = createServer((_request, response) => {
      response.write("first\n");
      const timer = setInterval(() => response.write("more\n"), 50);
      response.on("close", () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-proxy-cancel") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.get("/feed", lockGuard({ locks, name: () => "feed" }), (c) => fetch(url, { signal: c.get("lease").signal }));
    try {
      const response = await app.request("/feed");
      const reader = response.body!.getReader();
      await reader.read();
      const cancelled = await reader.cancel(new Error("client left")).then(() => "resolved", (error: unknown) => `rejected: ${String(error)}`);
      await sleep(200);
      expect({ cancelled, held: (await locks.inspect("feed")).held }).toEqual({ cancelled: "resolved", held: false });
    } finally {
      upstream.closeAllConnections();
      upstream.close();
    }
  });
});
