// The JSDoc @example blocks of src/, run as written against real Redis (through the local
// Upstash-compatible server); only the scaffolding each example implies is added here.
// These: lockGuard, requireFence and fencedFetch, and guardFetch.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { Hono } from "hono";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createFencedStore, createLocks, LockLostError, StaleFenceError } from "../../../../src/index.ts";
import { lockGuard, requireFence, type FenceVariables, type LockVariables } from "../../../../src/hono.ts";
import { fencedFetch } from "../../../../src/http.ts";
import { guardFetch } from "../../../../src/edge/guard-fetch.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** A Hono app on a real port, so fencedFetch goes through the real fetch(). */
async function serve(app: Hono<{ Variables: FenceVariables }>): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const response = await app.fetch(new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method, headers: req.headers as Record<string, string>, body: chunks.length ? Buffer.concat(chunks) : null,
    }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe("@example src/edge/lock-guard.ts lockGuard", () => {
  it("lockGuard example: one payment per order at a time, 423 with Retry-After for another, released once answered", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("orders") });
    const charges: { id: string; fencingToken: number; aborted: boolean }[] = [];
    let finish = () => {};
    const paying = new Promise<void>((resolve) => (finish = resolve));
    async function charge(id: string, { fencingToken, signal }: { fencingToken: number; signal: AbortSignal }) {
      charges.push({ id, fencingToken, aborted: signal.aborted });
      await paying;
    }

    const app = new Hono<{ Variables: LockVariables }>();
    app.post("/orders/:id/pay", lockGuard({ locks, name: (c) => `order:${c.req.param("id")}` }), async (c) => {
      const lease = c.get("lease");
      await charge(c.req.param("id"), { fencingToken: lease.fence, signal: lease.signal });
      return c.json({ paid: true });
    });

    const first = app.request("/orders/42/pay", { method: "POST" });
    await until(async () => charges.length === 1, 3_000);
    const second = await app.request("/orders/42/pay", { method: "POST" });
    expect(second.status).toBe(423);
    expect(Number(second.headers.get("Retry-After"))).toBeGreaterThan(0);
    const { fence } = await locks.inspect("order:42");
    finish();
    expect(await (await first).json()).toEqual({ paid: true });
    expect(charges).toEqual([{ id: "42", fencingToken: fence, aborted: false }]);
    expect((await locks.inspect("order:42")).held).toBe(false);
  });
});

describe("@example src/edge/require-fence.ts requireFence and src/fencing/http/fenced-fetch.ts fencedFetch", () => {
  function blobs() {
    const redis = upstash();
    const store = createFencedStore({ redis, prefix: uniquePrefix("blobs") });
    const app = new Hono<{ Variables: FenceVariables }>();
    app.put("/blobs/:id", requireFence({ store, resource: (c) => c.req.param("id") }), async (c) => {
      await store.write(c.req.param("id"), await c.req.json(), c.get("fence"));
      return c.body(null, 204);
    });
    return { app, store, locks: createLocks({ redis, prefix: uniquePrefix("blob-locks") }) };
  }
  const put = (app: Hono<{ Variables: FenceVariables }>, token?: string) =>
    app.request("/blobs/invoice-42", { method: "PUT", body: '{"paid":true}', headers: token ? { "Fencing-Token": token } : {} });

  it("requireFence example: stores with the current fence; 428 without one, 400 malformed, 409 older with the highest", async () => {
    const { app, store, locks } = blobs();
    const lease = await locks.acquire("invoice-42");
    expect((await put(app, String(lease.fence))).status).toBe(204);
    expect(await store.read("invoice-42")).toEqual({ value: { paid: true }, fence: lease.fence });
    expect((await put(app)).status).toBe(428);
    expect((await put(app, "abc")).status).toBe(400);
    const stale = await put(app, String(lease.fence - 1));
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ highestFence: lease.fence });
    await lease.release();
  });

  it("requireFence example: a StaleFenceError from the handler's write (a newer holder got in meanwhile) is a 409 too", async () => {
    const { app, store, locks } = blobs();
    vi.spyOn(console, "error").mockImplementation(() => {}); // Hono logs the handler's error before requireFence answers it
    const lease = await locks.acquire("invoice-42");
    // The body arrives only after a newer holder has claimed the blob, between requireFence's claim and the write.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await store.claim("invoice-42", lease.fence + 1);
        controller.enqueue(new TextEncoder().encode('{"paid":true}'));
        controller.close();
      },
    }, { highWaterMark: 0 });
    const res = await app.request("/blobs/invoice-42", { method: "PUT", body, duplex: "half", headers: { "Fencing-Token": String(lease.fence) } } as RequestInit);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ highestFence: lease.fence + 1 });
    expect(await store.read("invoice-42")).toBeNull();
    await lease.release();
  });

  it("fencedFetch example: sends the lease's fence, and a newer holder's 409 becomes StaleFenceError", async () => {
    const { app, store, locks } = blobs();
    const { url, server } = await serve(app);
    try {
      const BLOBS = `${url}/blobs`;
      const body = JSON.stringify({ paid: true });
      const lease = await locks.acquire("invoice-42");

      await fencedFetch(lease, `${BLOBS}/invoice-42`, { method: "PUT", body });
      expect(await store.read("invoice-42")).toEqual({ value: { paid: true }, fence: lease.fence });
      await store.claim("invoice-42", lease.fence + 1); // a newer holder got in
      await expect(fencedFetch(lease, `${BLOBS}/invoice-42`, { method: "PUT", body })).rejects.toThrow(StaleFenceError);
    } finally {
      server.close();
    }
  });

  it("fencedFetch example: aborts the request when the lease is lost", async () => {
    const { app, locks } = blobs();
    app.put("/slow/:id", () => new Promise<Response>(() => {})); // never answers
    const { url, server } = await serve(app);
    try {
      const BLOBS = `${url}/slow`;
      const body = "{}";
      const lease = await locks.acquire("invoice-42", { leaseMs: 300 });
      await expect(fencedFetch(lease, `${BLOBS}/invoice-42`, { method: "PUT", body })).rejects.toThrow(LockLostError);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("@example src/edge/guard-fetch.ts guardFetch", () => {
  it("guardFetch example: one request per path at a time, 423 with Retry-After for the others, released once the body is sent", async () => {
    const { url, token } = inject("upstash");
    interface Env { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string }
    const env: Env = { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token };
    const ctx = { waitUntil: () => {} };
    const path = `/reports/${crypto.randomUUID()}`;

    const worker = {
      fetch: guardFetch({
        locks: (env: Env) => createLocks({ redis: new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }) }),
        name: (request) => new URL(request.url).pathname,
      }, async (request, env, ctx, lease) => new Response(`fence ${lease.fence}`)),
    };

    const first = await worker.fetch(new Request(`http://localhost${path}`), env, ctx);
    const second = await worker.fetch(new Request(`http://localhost${path}`), env, ctx);
    expect(second.status).toBe(423);
    expect(Number(second.headers.get("Retry-After"))).toBeGreaterThan(0);
    const other = await worker.fetch(new Request(`http://localhost${path}-other`), env, ctx);
    expect([other.status, await other.text()]).toEqual([200, expect.stringMatching(/^fence \d+$/)]);
    const locks = createLocks({ redis: upstash() });
    const { fence } = await locks.inspect(path);
    expect(await first.text()).toBe(`fence ${fence}`);
    expect((await locks.inspect(path)).held).toBe(false);
  });
});
