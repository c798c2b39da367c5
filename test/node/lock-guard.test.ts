import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { stream } from "hono/streaming";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError } from "../../src/index.ts";
import { lockGuard, requireFence, type LockVariables } from "../../src/hono.ts";
import { guardFetch } from "../../src/worker.ts";
import { sleep } from "../../src/wait.ts";
import { gzipUpstream } from "../support/gzip-upstream.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

describe("lockGuard", () => {
  it("holds the lock while a streamed body is still being written, and lets it go once sent", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-stream") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.post("/jobs/:id", lockGuard({ locks, name: (c) => `job:${c.req.param("id")}` }), (c) => {
      const lease = c.get("lease");
      return stream(c, async (body) => {
        await sleep(300); // the work goes on after the handler returned its Response
        await body.write(lease.signal.aborted ? "lease lost" : `fence ${lease.fence}`);
      });
    });
    const first = await app.request("/jobs/1", { method: "POST" });
    const second = await app.request("/jobs/1", { method: "POST" });
    expect(second.status).toBe(423);
    expect(await first.text()).toMatch(/^fence \d+$/);
    expect((await locks.inspect("job:1")).held).toBe(false);
  });

  it("has let the lock go by the time a client has read the whole body, so its next request gets in", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-next") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.post("/jobs/:id", lockGuard({ locks, name: (c) => `job:${c.req.param("id")}` }), (c) => c.json({ fence: c.get("lease").fence }));
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await app.request("/jobs/1", { method: "POST" });
      await response.json();
      statuses.push(response.status);
    }
    expect(statuses).toEqual(Array(20).fill(200));
  });

  it("lets the lock go when the client stops reading the body", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-cancel") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.get("/feed", lockGuard({ locks, name: () => "feed" }), (c) =>
      stream(c, async (body) => {
        for (let i = 0; i < 100 && !body.aborted; i++) await body.write(`${i}\n`).then(() => sleep(20));
      }));
    const response = await app.request("/feed");
    const reader = response.body?.getReader();
    await reader?.read();
    await reader?.cancel();
    await sleep(100);
    expect((await locks.inspect("feed")).held).toBe(false);
  });

  it("refuses options it does not know, or bad values, when it is built rather than on every request", () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-options") });
    const name = () => "job";
    expect(() => lockGuard({ locks, name, waitMS: 1_000 } as never)).toThrow(/unknown option "waitMS"/);
    expect(() => lockGuard({ locks, name, waitMs: -1 })).toThrow(/waitMs: must be at least 0 ms/);
    expect(() => lockGuard({ locks, name, release: "later" as never })).toThrow(/release: expected "await" or "waitUntil"/);
    expect(() => lockGuard({ locks, name, leaseMs: 50 })).toThrow(LockConfigError);
    expect(() => guardFetch({ locks: () => locks, name, waitMs: Number.NaN }, () => new Response())).toThrow(/waitMs/);
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("guard-options") });
    expect(() => requireFence({ store, resource: name, claim: "false" as never })).toThrow(/claim: expected true or false/);
  });

  it("uses the option values it checked, callbacks too, not a second read of them (a getter can answer differently)", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-options") });
    let reads = 0;
    // Valid when checked, then a waitMs that fails every acquire and a name that is no function.
    const options = { locks, get waitMs() {
      return reads++ < 2 ? 0 : -5;
    }, get name() {
      return reads++ < 2 ? () => "job" : "job";
    } };
    const app = new Hono();
    app.get("/", lockGuard(options as never), (c) => c.text("ran"));
    const response = await app.request("/");
    expect([response.status, await response.text()]).toEqual([200, "ran"]);
  });

  it("gives its callbacks the app's typed env, as do requireFence's", async () => {
    type AppEnv = { Bindings: { LOCK_NAME: string }; Variables: LockVariables };
    const prefix = uniquePrefix("guard-env");
    const locks = createLocks({ redis: upstash(), prefix });
    const store = createFencedStore({ redis: upstash(), prefix });
    const app = new Hono<AppEnv>();
    app.post("/", lockGuard<AppEnv>({ locks, name: (c) => c.env.LOCK_NAME }), (c) => c.json({ fence: c.get("lease").fence }));
    app.put("/", requireFence<AppEnv>({ store, resource: (c) => c.env.LOCK_NAME }), (c) => c.body(null, 204));
    // @ts-expect-error: the app has no such binding
    lockGuard<AppEnv>({ locks, name: (c) => c.env.MISSING });
    // @ts-expect-error: nor such a variable
    requireFence<AppEnv>({ store, resource: (c) => c.get("missing") });
    const env = { LOCK_NAME: "from-env" };
    const { fence } = (await (await app.request("/", { method: "POST" }, env)).json()) as { fence: number };
    expect((await locks.inspect("from-env")).fence).toBe(fence);
    const put = await app.request("/", { method: "PUT", headers: { "Fencing-Token": String(fence) } }, env);
    expect(put.status).toBe(204);
    await expect(store.write("from-env", "late", fence - 1)).rejects.toThrow(/stale/);
  });

  it("answers 400, not 500, when the name built from the request is not a usable lock name", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-name") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.post("/orders/:id", lockGuard({ locks, name: (c) => `order:${c.req.param("id")}` }), (c) => c.json({ ok: true }));
    const response = await app.request(`/orders/${"x".repeat(600)}`, { method: "POST" });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ status: 400, detail: expect.stringMatching(/over the limit of 512/) });
  });

  it("answers 400 to an empty name from the request, and treats a name function that returns no string as the app's bug", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-empty") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.onError((error, c) => c.json({ error: error.message }, 500));
    app.post("/jobs", lockGuard({ locks, name: (c) => c.req.query("job") ?? "" }), (c) => c.text("ran"));
    // An async name function: it returns a Promise, which no request can fix.
    const asyncName = (async () => "job") as unknown as () => string;
    app.post("/async", lockGuard({ locks, name: asyncName }), (c) => c.text("ran"));
    app.post("/typo", lockGuard({ locks, name: (c) => c.req.param("id") }), (c) => c.text("ran"));
    const empty = await app.request("/jobs?job=", { method: "POST" });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ title: "Unusable name", detail: expect.stringMatching(/must not be empty/) });
    expect((await app.request("/jobs", { method: "POST" })).status).toBe(400);
    for (const [path, got] of [["/async", "object"], ["/typo", "undefined"]] as const) {
      const response = await app.request(path, { method: "POST" });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: `Invalid lock name: expected a string, got ${got}` });
    }
  });

  it("leaves a handler that forgot to return its Response failing, as without the guard, and lets the lock go", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-no-response") });
    const app = new Hono<{ Variables: LockVariables }>();
    const forgotReturn = (c: { text: (text: string) => Response }) => void c.text("paid");
    // Behind any middleware Hono answers this 500 "Context is not finalized" (alone, 404).
    app.post("/plain", async (_c, next) => void (await next()), forgotReturn as never);
    app.post("/guarded", lockGuard({ locks, name: () => "pay" }), forgotReturn as never);
    const [plain, guarded] = [await app.request("/plain", { method: "POST" }), await app.request("/guarded", { method: "POST" })];
    expect(plain.status).toBe(500);
    expect([guarded.status, await guarded.text()]).toEqual([plain.status, await plain.text()]);
    expect((await locks.inspect("pay")).held).toBe(false);
  });

  it("answers a client that goes away while waiting without an error, and gives up its place in line", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-gone") });
    const errors: unknown[] = [];
    const app = new Hono<{ Variables: LockVariables }>();
    app.onError((error, c) => (errors.push(error), c.text("error", 500)));
    app.post("/jobs/:id", lockGuard({ locks, name: (c) => `job:${c.req.param("id")}`, waitMs: 10_000 }), (c) => c.text("ran"));
    const holder = await locks.acquire("job:1");
    const client = new AbortController();
    const response = app.request("/jobs/1", { method: "POST", signal: client.signal });
    await until(async () => (await locks.inspect("job:1")).waiters === 1, 3_000);
    client.abort();
    expect((await response).status).toBe(423);
    expect(errors).toEqual([]);
    await until(async () => (await locks.inspect("job:1")).waiters === 0, 3_000);
    await holder.release();
  });

  it("lets the lock go after a HEAD request to a guarded GET route", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-head") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.get("/report", lockGuard({ locks, name: () => "report" }), (c) => c.text("report"));
    const head = await app.request("/report", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull(); // Hono answers HEAD with the GET response's headers and no body
    await sleep(100);
    expect((await locks.inspect("report")).held).toBe(false);
    expect((await app.request("/report")).status).toBe(200);
  });

  it("lets the lock go when the handler's Response cannot be passed on (its body is already locked)", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-locked-body") });
    const app = new Hono<{ Variables: LockVariables }>();
    app.get("/report", lockGuard({ locks, name: () => "report" }), () => {
      const response = new Response("report");
      response.body?.getReader(); // a handler bug: the body is locked, like a Response returned twice
      return response;
    });
    expect((await app.request("/report")).status).toBe(500);
    expect((await locks.inspect("report")).held).toBe(false);
  });

  it("refuses a name or locks that is not a function when it is built, rather than failing every request", () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-options-fn") });
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("guard-options-fn") });
    const built = (build: () => unknown) => { try { build(); return "built"; } catch (error) { return (error as Error).name; } };
    expect({
      stringName: built(() => lockGuard({ locks, name: "job" } as never)),
      noLocks: built(() => lockGuard({ name: () => "job" } as never)),
      fetchLocksNotFunction: built(() => guardFetch({ locks, name: () => "job" } as never, () => new Response())),
      noHandler: built(() => guardFetch({ locks: () => locks, name: () => "job" }, undefined as never)),
      stringResource: built(() => requireFence({ store, resource: "id" } as never)),
      // requireFence claims by default: a store that cannot would be a 500 on every request.
      storeWithoutClaim: built(() => requireFence({ store: { write: store.write }, resource: () => "id" } as never)),
    }).toEqual({
      stringName: "LockConfigError", noLocks: "LockConfigError", fetchLocksNotFunction: "LockConfigError",
      noHandler: "LockConfigError", stringResource: "LockConfigError", storeWithoutClaim: "LockConfigError",
    });
  });

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
