// What lockGuard (and guardFetch, requireFence) check when built, and the lock names it builds
// from each request.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError } from "../../../../src/index.ts";
import { lockGuard, requireFence, type LockVariables } from "../../../../src/hono.ts";
import { guardFetch } from "../../../../src/edge/guard-fetch.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("lockGuard", () => {
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

  it("answers 400 to a name the lock set's hashTag finds no tag in, and 500 to a hashTag that returns no string", async () => {
    const redis = upstash();
    const prefix = uniquePrefix("guard-tag");
    // node.md's co-location example: the tag is the part before the first "/".
    const tagged = createLocks({ redis, prefix, hashTag: (name) => name.split("/")[0]! });
    const broken = createLocks({ redis, prefix, hashTag: (async () => "user") as unknown as () => string });
    const app = new Hono<{ Variables: LockVariables }>();
    app.onError((error, c) => c.json({ error: error.message }, 500));
    app.post("/tagged", lockGuard({ locks: tagged, name: (c) => c.req.query("job") ?? "" }), (c) => c.text("ran"));
    app.post("/broken", lockGuard({ locks: broken, name: () => "user/charge" }), (c) => c.text("ran"));
    for (const job of ["/charge", "{user:42}/charge"]) {
      const response = await app.request(`/tagged?job=${encodeURIComponent(job)}`, { method: "POST" });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ title: "Unusable name", detail: expect.stringMatching(/hashTag returned/) });
    }
    const response = await app.request("/broken", { method: "POST" });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: expect.stringMatching(/^Invalid hashTag: hashTag returned object/) });
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    expect(await (await app.request("/tagged?job=user:42/charge", { method: "POST" })).text()).toBe("ran");
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

  it("says what is wrong when a locks factory returns no lock set, in lockGuard and guardFetch", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-async-locks") });
    // An async factory: it returns a Promise of the lock set, which no request can fix.
    const asyncLocks = (async () => locks) as unknown as () => typeof locks;
    const app = new Hono<{ Variables: LockVariables }>();
    app.onError((error, c) => c.json({ error: `${error.name}: ${error.message}` }, 500));
    app.post("/jobs", lockGuard({ locks: asyncLocks, name: () => "job" }), (c) => c.text("ran"));
    const response = await app.request("/jobs", { method: "POST" });
    expect(response.status).toBe(500);
    const message = "locks: expected a lock set from createLocks(), got a Promise: createLocks needs no await";
    expect(await response.json()).toEqual({ error: `LockConfigError: Invalid lockGuard options: ${message}` });
    const handler = guardFetch({ locks: asyncLocks, name: () => "job" }, () => new Response("ran"));
    await expect(handler(new Request("http://localhost/jobs"), {}, { waitUntil: () => undefined })).rejects.toThrow(`Invalid guardFetch options: ${message}`);
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
});
