// requireFence on the server side: the Fencing-Token header checked, and a stale fence refused
// with 409.
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import { createFencedStore, LockUnavailableError, StaleFenceError } from "../../../src/index.ts";
import { parseFenceHeader } from "../../../src/http.ts";
import { requireFence, type FenceVariables } from "../../../src/hono.ts";
import { blobService } from "../../support/blob-service.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

const put = (app: Hono<{ Variables: FenceVariables }>, token: string | undefined, query = "") =>
  app.request(`/blobs/invoice-42${query}`, {
    method: "PUT",
    body: "paid",
    headers: token === undefined ? {} : { "Fencing-Token": token },
  });

describe("requireFence", () => {
  it("runs the handler with the fence when the token is current", async () => {
    const { app, store } = blobService();
    const res = await put(app, "1700000000000001");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ stored: true, fence: 1700000000000001 });
    expect(await store.read("invoice-42")).toEqual({ value: "paid", fence: 1700000000000001 });
  });

  it("answers 428 when the token is missing", async () => {
    const res = await put(blobService().app, undefined);
    expect(res.status).toBe(428);
    expect(res.headers.get("Content-Type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ status: 428, title: "Fencing token required" });
  });

  // Only space and tab may surround a header value: U+00A0, \v and \f are junk, not whitespace.
  it.each(["", "abc", "-1", "0", "1.5", "1e3", "0x10", "01", "+5", "9007199254740992", "99999999999999999999", "12 13",
    "\u00A05", "5\u00A0", "\u000B5", "5\u000C"])(
    "answers 400 to the malformed token %j and writes nothing",
    async (token) => {
      const { app, store } = blobService();
      const res = await put(app, token);
      expect(res.status).toBe(token === "" ? 428 : 400);
      expect(await store.read("invoice-42")).toBeNull();
    },
  );

  it("answers 400, not 500, when the resource name the request makes is not usable, and claims nothing", async () => {
    const { app } = blobService();
    const res = await app.request(`/blobs/${"x".repeat(600)}`, { method: "PUT", body: "paid", headers: { "Fencing-Token": "1700000000000001" } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ status: 400, detail: expect.stringMatching(/over the limit of 512/) });
  });

  it("answers 400 to an empty resource name from the request, and claims nothing", async () => {
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("blobs-empty") });
    const app = new Hono<{ Variables: FenceVariables }>();
    app.put("/blobs", requireFence({ store, resource: (c) => c.req.query("key") ?? "" }), (c) => c.text("ran"));
    const res = await app.request("/blobs?key=", { method: "PUT", headers: { "Fencing-Token": "1700000000000001" } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ title: "Unusable name", detail: expect.stringMatching(/resource name: must not be empty/) });
  });

  it("answers 400 to a fence from the future, which would otherwise lock every honest holder out", async () => {
    const { app, locks, store } = blobService();
    // Fences are server time in µs: no lease mints one an hour ahead of now.
    for (const forged of ["9007199254740991", String((Date.now() + 2 * 3_600_000) * 1000)]) {
      const res = await put(app, forged);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ title: "Malformed fencing token" });
    }
    const lease = await locks.acquire("invoice-42");
    expect((await put(app, String(lease.fence))).status).toBe(200);
    expect(await store.read("invoice-42")).toEqual({ value: "paid", fence: lease.fence });
    await lease.release();
  });

  // This process's clock allows it (20 min ahead of Redis'), the store's Lua does not (75 min ahead of its clock).
  it("answers 400 to a fence the store's Redis refuses as over 70 minutes ahead of its clock, and runs no handler", async () => {
    const { app, store } = blobService();
    const redisNow = Date.now();
    const spy = vi.spyOn(Date, "now").mockReturnValue(redisNow + 20 * 60_000);
    try {
      const res = await put(app, String((redisNow + 75 * 60_000) * 1000));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ title: "Malformed fencing token", detail: expect.stringMatching(/over 70 minutes ahead of the store Redis' clock/) });
    } finally {
      spy.mockRestore();
    }
    expect(await store.read("invoice-42")).toBeNull();
  });

  it("answers 409 with the highest fence seen when the token is stale, and keeps the newer value", async () => {
    const { app, store } = blobService();
    await store.write("invoice-42", "refunded", 500);
    const res = await put(app, "400");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ status: 409, fence: 400, highestFence: 500 });
    expect(await store.read("invoice-42")).toEqual({ value: "refunded", fence: 500 });
  });

  // The claim, not the handler's own write, must refuse: a handler may do other work first.
  it("claims the fence before the handler runs: a stale token never reaches it, a current one holds older writes off", async () => {
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("claims") });
    let runs = 0;
    const app = new Hono<{ Variables: FenceVariables }>();
    app.put("/blobs/:id", requireFence({ store, resource: (c) => c.req.param("id") }), (c) => (runs++, c.text("ran")));
    await store.write("doc", "newer", 500);
    const stale = await app.request("/blobs/doc", { method: "PUT", headers: { "Fencing-Token": "400" } });
    expect([stale.status, runs]).toEqual([409, 0]);
    const current = await app.request("/blobs/doc", { method: "PUT", headers: { "Fencing-Token": "600" } });
    expect([current.status, runs]).toEqual([200, 1]);
    await expect(store.write("doc", "late", 550)).rejects.toThrow(StaleFenceError);
  });

  it("answers 409 when a newer holder claims the resource while the handler runs", async () => {
    const res = await put(blobService().app, "700", "?overtaken=1");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ fence: 700, highestFence: 705 });
  });

  // Hono's default onError would log the handler's StaleFenceError, an expected refusal.
  it("answers 409 when the app's own onError answered the handler's StaleFenceError first", async () => {
    const { app } = blobService();
    const unexpected: unknown[] = [];
    app.onError((error, c) => {
      if (!(error instanceof StaleFenceError)) unexpected.push(error);
      return c.text("handled", 500);
    });
    const res = await put(app, "700", "?overtaken=1");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ fence: 700, highestFence: 705 });
    expect(unexpected).toEqual([]);
  });

  it("lets the error response be replaced", async () => {
    const redis = upstash();
    const store = createFencedStore({ redis, prefix: uniquePrefix("blobs") });
    const app = new Hono();
    app.put("/x", requireFence({ store, resource: () => "x", onProblem: (c, p) => c.text(`no: ${p.title}`, 418) }), (c) => c.text("ok"));
    const res = await app.request("/x", { method: "PUT" });
    expect(res.status).toBe(418);
    expect(await res.text()).toBe("no: Fencing token required");
  });

  it("calls the resource function it checked, not a second read of the option", async () => {
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("blobs") });
    let reads = 0;
    const options = { store, get resource() {
      return reads++ === 0 ? () => "x" : "x";
    } };
    const app = new Hono();
    app.put("/x", requireFence(options as never), (c) => c.text("ok"));
    const res = await app.request("/x", { method: "PUT", headers: { "Fencing-Token": "1700000000000001" } });
    expect([res.status, await res.text()]).toEqual([200, "ok"]);
  });

  it("answers 503 with Retry-After when Redis cannot check the fence, runs no handler, and logs why", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const down = async () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:6379");
    };
    const store = createFencedStore({ redis: { evalsha: down, eval: down }, prefix: uniquePrefix("blobs") });
    const app = new Hono();
    app.put("/x", requireFence({ store, resource: () => "x" }), (c) => c.text("ran"));
    const res = await app.request("/x", { method: "PUT", headers: { "Fencing-Token": "1700000000000001" } });
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(await res.json()).toMatchObject({ title: "Fence check unavailable", retryAfter: 1 });
    expect(String(logged.mock.calls[0]?.[0])).toMatch(/ECONNREFUSED.*check that Redis is running/);
    logged.mockRestore();
  });

  // A "retry" answer would invite the client to run work again that may have had effects.
  it("leaves a handler's own LockUnavailableError to the app, once the fence was checked", async () => {
    const store = createFencedStore({ redis: upstash(), prefix: uniquePrefix("blobs") });
    let runs = 0;
    const app = new Hono();
    app.onError((error, c) => c.text(`app: ${error.name}`, 500));
    app.put("/x", requireFence({ store, resource: () => "x" }), () => {
      runs++;
      throw new LockUnavailableError("Redis request for store-fence failed (OOM command not allowed)");
    });
    const res = await app.request("/x", { method: "PUT", headers: { "Fencing-Token": "1700000000000001" } });
    expect([res.status, res.headers.get("Retry-After"), await res.text(), runs]).toEqual([500, null, "app: LockUnavailableError", 1]);
  });
});

describe("parseFenceHeader", () => {
  it("takes space and tab around the digits, and nothing else", () => {
    expect(parseFenceHeader(" \t1700000000000001\t ")).toEqual({ ok: true, fence: 1700000000000001 });
    expect(parseFenceHeader("\uFEFF5")).toEqual({ ok: false, problem: "malformed" });
    expect(parseFenceHeader(" \t")).toEqual({ ok: false, problem: "missing" });
    expect(parseFenceHeader(null)).toEqual({ ok: false, problem: "missing" });
  });

  // A value with a long inner run of spaces ("1", spaces, "x": fetch's Headers keep inner
  // whitespace) once cost quadratic time to trim: over a second of blocked event loop at 30 KB.
  it("refuses a long malformed token at once, and in requireFence before the handler runs", async () => {
    const hostile = `1${" ".repeat(50_000)}x`;
    const started = performance.now();
    expect(parseFenceHeader(hostile)).toEqual({ ok: false, problem: "malformed" });
    expect(parseFenceHeader(` ${" ".repeat(50_000)}`)).toEqual({ ok: false, problem: "missing" });
    expect(parseFenceHeader(`${" ".repeat(50_000)}12x`)).toEqual({ ok: false, problem: "malformed" });
    expect(performance.now() - started).toBeLessThan(1_000); // microseconds now; seconds before, quadratic

    const { app } = blobService();
    const res = await put(app, hostile.slice(0, 30_000) + "x");
    expect(res.status).toBe(400);
  });
});
