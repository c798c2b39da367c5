// lockGuard holds the lock while the response is being sent, and lets it go once it is, or once
// the client stops reading or leaves, or the handler's response cannot be sent.
import { Hono } from "hono";
import { stream } from "hono/streaming";
import { describe, expect, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { lockGuard, type LockVariables } from "../../../../src/hono.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

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
});
