// A Redis that refuses every request (a wrong token here) is a 503 for the client, and what to fix
// for the app: logged by default, handed to onLocked and onProblem to log as they please.
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createFencedStore, createLocks, LockUnavailableError } from "../../../../src/index.ts";
import { lockGuard, requireFence } from "../../../../src/hono.ts";
import { guardFetch, type Refusal } from "../../../../src/edge/guard-fetch.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

const wrongToken = () => upstash({ token: "wrong-token" });
const TOKEN_HINT = /the token was refused: check UPSTASH_REDIS_REST_TOKEN/;

describe("guards on a Redis that refuses the token", () => {
  afterEach(() => vi.restoreAllMocks());

  it("lockGuard answers 503 and logs the lock set's error, which says what to fix", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const locks = createLocks({ redis: wrongToken(), prefix: uniquePrefix("guard-token") });
    const app = new Hono();
    app.put("/job", lockGuard({ locks, name: () => "job" }), (c) => c.text("ran"));
    const response = await app.request("/job", { method: "PUT" });
    expect([response.status, response.headers.get("Retry-After")]).toEqual([503, "1"]);
    // The body is the client's: it names no token and no host.
    expect(await response.json()).toMatchObject({ type: "urn:fencelock:problem:lock-unavailable", status: 503 });
    expect(logged).toHaveBeenCalledTimes(1);
    expect(String(logged.mock.calls[0]?.[0])).toMatch(TOKEN_HINT);
  });

  it("lockGuard and guardFetch hand the error to onLocked, and log nothing themselves then", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const locks = createLocks({ redis: wrongToken(), prefix: uniquePrefix("guard-token") });
    const seen: (Refusal["error"])[] = [];
    const onLocked = (_: unknown, { problem, error }: Refusal) => (seen.push(error), new Response(null, { status: problem.status }));
    const app = new Hono();
    app.put("/job", lockGuard({ locks, name: () => "job", onLocked }), (c) => c.text("ran"));
    const fetch = guardFetch({ locks: () => locks, name: () => "job", onLocked }, () => new Response("ran"));
    expect((await app.request("/job", { method: "PUT" })).status).toBe(503);
    expect((await fetch(new Request("http://x/job"), {}, { waitUntil: () => undefined })).status).toBe(503);
    expect(seen).toHaveLength(2);
    for (const error of seen) {
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error?.message).toMatch(TOKEN_HINT);
    }
    expect(logged).not.toHaveBeenCalled();
  });

  it("requireFence answers 503, logs the store's error by default, and hands it to onProblem", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const store = createFencedStore({ redis: wrongToken(), prefix: uniquePrefix("fence-token") });
    const headers = { "Fencing-Token": "1700000000000001" };
    const app = new Hono();
    app.put("/x", requireFence({ store, resource: () => "x" }), (c) => c.text("ran"));
    const response = await app.request("/x", { method: "PUT", headers });
    expect([response.status, response.headers.get("Retry-After")]).toEqual([503, "1"]);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(String(logged.mock.calls[0]?.[0])).toMatch(TOKEN_HINT);

    let handed: unknown;
    const custom = new Hono();
    custom.put("/x", requireFence({ store, resource: () => "x", onProblem: (_c, problem, error) => ((handed = error), new Response(problem.title, { status: problem.status })) }), (c) => c.text("ran"));
    expect((await custom.request("/x", { method: "PUT", headers })).status).toBe(503);
    expect(handed).toBeInstanceOf(LockUnavailableError);
    expect(logged).toHaveBeenCalledTimes(1);
  });
});
