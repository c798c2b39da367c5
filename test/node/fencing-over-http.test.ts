import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, StaleFenceError } from "../../src/index.ts";
import { fencedFetch, parseFenceHeader } from "../../src/http.ts";
import { requireFence, type FenceVariables } from "../../src/hono.ts";
import { withFetch } from "../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/** A blob service whose writes are checked by fence, over the real store and Redis. */
function blobService(options: { claim?: boolean } = {}) {
  const redis = upstash();
  const prefix = uniquePrefix("blobs");
  const store = createFencedStore({ redis, prefix });
  const app = new Hono<{ Variables: FenceVariables }>();
  app.put("/blobs/:id", requireFence({ store, resource: (c) => c.req.param("id"), ...options }), async (c) => {
    const fence = c.get("fence");
    if (c.req.query("overtaken")) await store.claim(c.req.param("id"), fence + 5); // a newer holder got in
    await store.write(c.req.param("id"), await c.req.text(), fence);
    return c.json({ stored: true, fence });
  });
  return { app, store, locks: createLocks({ redis, prefix }) };
}

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

  it("answers 409 with the highest fence seen when the token is stale, and keeps the newer value", async () => {
    const { app, store } = blobService();
    await store.write("invoice-42", "refunded", 500);
    const res = await put(app, "400");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ status: 409, fence: 400, highestFence: 500 });
    expect(await store.read("invoice-42")).toEqual({ value: "refunded", fence: 500 });
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
    expect(performance.now() - started).toBeLessThan(100); // microseconds now; seconds before

    const { app } = blobService();
    const res = await put(app, hostile.slice(0, 30_000) + "x");
    expect(res.status).toBe(400);
  });
});

describe("fencedFetch", () => {
  // Any other 409 (a conflict page, a stream) is the caller's: fencedFetch once read it whole first.
  it("hands back a 409 that is not a stale-fence problem with its body whole, without buffering an endless one", async () => {
    const other = { type: "urn:example:conflict", title: "Already paid" };
    const endless = createServer((request, response) => {
      if (request.url === "/other") return void response.writeHead(409, { "content-type": "application/problem+json" }).end(JSON.stringify(other));
      response.writeHead(409, { "content-type": request.url === "/json" ? "application/json" : "text/html" });
      response.write(request.url === "/json" ? '{"type": "' : "<html>");
      const timer = setInterval(() => response.write("x".repeat(16 * 1024)), 5);
      response.on("close", () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(endless.address() as AddressInfo).port}`;
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-42");
    try {
      for (const path of ["/html", "/json"]) {
        const stop = new AbortController();
        const answer = fencedFetch(lease, `${base}${path}`, { signal: stop.signal });
        const late = new Promise<string>((resolve) => setTimeout(() => resolve("still reading after 2 s"), 2_000));
        const response = await Promise.race([answer, late]);
        if (typeof response === "string") throw new Error(response);
        expect({ status: response.status, url: response.url }).toEqual({ status: 409, url: `${base}${path}` });
        // The body as sent, from its first byte: what fencedFetch read to tell is put back.
        const first = await response.body?.getReader().read();
        expect(new TextDecoder().decode(first?.value)).toMatch(path === "/json" ? /^\{"type": "/ : /^<html>/);
        stop.abort(); // as a caller gives up on an endless body; no unhandled rejection may follow
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Another problem, read whole to tell, still reads whole, and so does its clone.
      const another = await fencedFetch(lease, `${base}/other`);
      const copy = another.clone();
      expect({ url: copy.url, redirected: copy.redirected }).toEqual({ url: `${base}/other`, redirected: false });
      expect([await another.json(), await copy.json()]).toEqual([other, other]);
    } finally {
      await lease.release();
      endless.closeAllConnections();
      endless.close();
    }
  });

  it("sends the lease's fence, and turns a stale answer into StaleFenceError", async () => {
    const { app, locks, store } = blobService();
    const lease = await locks.acquire("invoice-42");
    // Requests to blobs.test reach the app in-process; the store's own Redis traffic goes out as usual.
    const served: Response[] = [];
    const toApp = (real: typeof fetch): typeof fetch => async (input, init) => {
      const request = new Request(input, init);
      if (new URL(request.url).host !== "blobs.test") return real(request);
      served.push(await app.fetch(request));
      return served.at(-1) as Response;
    };
    const ok = await withFetch(toApp, () => fencedFetch(lease, "http://blobs.test/blobs/invoice-42", { method: "PUT", body: "v1" }));
    expect(ok.status).toBe(200);
    expect(await store.read("invoice-42")).toEqual({ value: "v1", fence: lease.fence });

    await store.claim("invoice-42", lease.fence + 1);
    const stale = await withFetch(toApp, () =>
      fencedFetch(lease, "http://blobs.test/blobs/invoice-42", { method: "PUT", body: "v2" }).catch((e: unknown) => e),
    );
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect(stale).toMatchObject({ fence: lease.fence, highestFence: lease.fence + 1 });
    // The 409 never reaches the caller, so its body is not left unread, holding the connection.
    expect(served.at(-1)?.bodyUsed).toBe(true);
    await lease.release();
  });

  it("keeps a Request's own headers, and lets init's headers replace them as fetch does", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-44");
    const seen: Headers[] = [];
    const record = (): typeof fetch => async (input, init) => {
      seen.push(new Request(input, init).headers);
      return new Response(null, { status: 204 });
    };
    const request = new Request("http://blobs.test/blobs/invoice-44", { method: "PUT", headers: { Authorization: "Bearer app" } });
    await withFetch(record, async () => {
      await fencedFetch(lease, request);
      await fencedFetch(lease, request, { headers: { "X-Trace": "1" } });
    });
    await lease.release();
    expect([seen[0]?.get("Authorization"), seen[0]?.get("Fencing-Token")]).toEqual(["Bearer app", String(lease.fence)]);
    expect([seen[1]?.get("Authorization"), seen[1]?.get("X-Trace"), seen[1]?.get("Fencing-Token")]).toEqual([null, "1", String(lease.fence)]);
  });

  it("aborts when the Request's own signal aborts, as fetch does, not only when the lease is lost", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-45");
    // As fetch does: the request ends when its signal aborts.
    const hang = (): typeof fetch => (input, init) => new Promise((_, reject) => {
      const { signal } = new Request(input, init);
      signal.addEventListener("abort", () => reject(signal.reason));
    });
    // `signal: undefined`, as from `{ ...options, signal: options.signal }`, gives no signal: fetch keeps the Request's.
    for (const init of [undefined, { signal: undefined }]) {
      const clientLeft = new AbortController();
      const request = new Request("http://blobs.test/blobs/invoice-45", { method: "PUT", body: "v", signal: clientLeft.signal });
      const outcome = withFetch(hang, () => fencedFetch(lease, request, init).catch((e: unknown) => e));
      clientLeft.abort(new Error("the client went away"));
      expect(await outcome).toMatchObject({ message: "the client went away" });
    }
    expect(lease.signal.aborted).toBe(false);
    await lease.release();
  });

  it("refuses what is not a Lease, such as the { name, owner, fence } record resume() takes, and sends nothing", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-46");
    const sent: Request[] = [];
    const record = (): typeof fetch => async (input, init) => (sent.push(new Request(input, init)), new Response(null, { status: 204 }));
    // Without the lease's signal the request would go on after the lease is lost.
    const notLeases = [{ name: lease.name, owner: lease.owner, fence: lease.fence }, { name: "job", fence: "1e3" }, null];
    for (const notLease of notLeases) {
      const refused = await withFetch(record, () => fencedFetch(notLease as never, "http://blobs.test/blobs/invoice-46").catch((e: unknown) => e));
      expect(refused).toMatchObject({ name: "LockConfigError", message: expect.stringMatching(/expected a Lease from acquire\(\) or resume\(\)/) });
      expect((refused as Error).message).not.toContain(lease.owner);
    }
    expect(sent).toEqual([]);
    // init null, as fetch takes it.
    await withFetch(record, () => fencedFetch(lease, "http://blobs.test/blobs/invoice-46", null));
    expect(sent[0]?.headers.get("Fencing-Token")).toBe(String(lease.fence));
    await lease.release();
  });

  it("aborts the request when the lease is gone", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-43");
    await lease.release();
    await expect(fencedFetch(lease, "http://blobs.test/never")).rejects.toThrow(/released/);
  });
});
