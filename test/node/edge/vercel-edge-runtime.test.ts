// fencelock in Vercel's Edge Runtime: the `edge-runtime` package (the VM Next.js runs edge routes in),
// the handler in test/edge/ bundled as Vercel bundles an edge function, over real HTTP to real Redis.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { EdgeRuntime } from "edge-runtime";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { LockState } from "../../../src/core/backend.ts";
import { rest } from "../../support/rest.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

/** Bundles the handler into one script (EdgeRuntime evaluates scripts, not modules), resolving packages for Vercel Edge. */
async function bundleEdgeFunction(entry: URL): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    write: false,
    platform: "neutral",
    conditions: ["edge-light", "worker", "browser"],
    mainFields: ["module", "main"],
    format: "iife",
    globalName: "edgeFunction",
    target: "es2022",
    logLevel: "silent",
  });
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error("esbuild produced no output for the edge handler");
  return output.text;
}

/** A service for fencedFetch: a PUT answers the Fencing-Token it was sent; /hang never answers. */
function startBlobs(): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url !== "/hang") response.end(request.headers["fencing-token"] ?? "");
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

let edge: EdgeRuntime;
let blobs: Server;
const prefix = uniquePrefix("edge");
beforeAll(async () => {
  blobs = await startBlobs();
  const { url, token } = inject("upstash");
  const env = {
    UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, PREFIX: prefix,
    BLOBS_URL: `http://127.0.0.1:${(blobs.address() as AddressInfo).port}`,
  };
  const script = await bundleEdgeFunction(new URL("../../edge/handler.ts", import.meta.url));
  edge = new EdgeRuntime({
    // The VM has no `process`; Vercel (and next dev, the same way) gives an edge function process.env.
    extend: (context) => Object.assign(context, { process: { env } }),
    initialCode: `${script}\naddEventListener("fetch", (event) => event.respondWith(edgeFunction.default(event.request)));`,
  });
});
afterAll(() => {
  blobs?.closeAllConnections();
  blobs?.close();
});

const call = (path: string, init?: RequestInit) => edge.dispatchFetch(`http://edge.test${path}`, init);
const post = (path: string) => call(path, { method: "POST" });
const json = async <T>(response: Promise<Response>) => (await (await response).json()) as T;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A contended acquire: the holder lets go 300 ms in, and the waiter gets the lock with a higher fence. */
async function contended(wake: "push" | "poll") {
  const body = await json<{ holderFence: number; fence: number; attempts: number; channels: string[]; waitedMs: number; state: LockState }>(
    post(`/contend/${wake}`),
  );
  expect(body.fence).toBeGreaterThan(body.holderFence);
  expect(body.state).toMatchObject({ held: true, fence: body.fence, holds: 1 });
  expect(body.waitedMs).toBeGreaterThanOrEqual(250);
  expect(body.waitedMs).toBeLessThan(2_000);
  return body;
}

/** How many SUBSCRIBE connections the server has on `channels`, all told. */
async function subscribers(channels: string[]): Promise<number> {
  const { result } = (await rest("/", { body: ["PUBSUB", "NUMSUB", ...channels] })).json as { result: (string | number)[] };
  return result.filter((_, i) => i % 2 === 1).reduce<number>((sum, count) => sum + Number(count), 0);
}

describe("the core in the Edge Runtime", () => {
  it("acquires, heartbeats, inspects and releases; `await using` gives the lease back", async () => {
    const body = await json<{ fence: number; remainingMs: number; state: LockState; after: LockState; nextFence: number; released: string }>(
      post("/basics"),
    );
    // 300 ms into a 5 s lease, the heartbeat extended it to its full length again: without it at
    // most 4,648 ms would remain (less the 52 ms drift allowance), and it leaves 248 ms for the heartbeat's request.
    expect(body.remainingMs).toBeGreaterThan(4_700);
    expect(body.state).toMatchObject({ held: true, fence: body.fence, holds: 1 });
    expect(body.after).toMatchObject({ held: false, holds: 0 });
    expect(body.nextFence).toBeGreaterThan(body.fence);
    expect(body.released).toBe("released");
  });

  it('wake: "push": the release hands the lock to the waiter on a server-sent-events stream, closed afterwards', async () => {
    const { attempts, channels } = await contended("push");
    // The first attempt and the one after SUBSCRIBE confirmed; none after the release.
    expect(attempts).toBe(2);
    // The waiter's lock set opened one stream, which it closes once idle (2 s outside Workers).
    expect(channels).toEqual([expect.stringMatching(/^fencelock\.[0-9a-f]{32}$/)]);
    await until(async () => (await subscribers(channels)) === 0, 10_000);
  });

  it('wake: "poll": the waiter looks again until the lock is free', async () => {
    expect((await contended("poll")).attempts).toBeGreaterThan(2);
  });

  it("lease.signal aborts when the lease lapses, and aborts the fencedFetch made under it", async () => {
    const body = await json<Record<string, unknown>>(post("/lapse"));
    expect(body).toMatchObject({
      aborted: true, reason: "LockLostError", fetchRejectedWithReason: true, heartbeat: "LockLostError",
    });
    // A 300 ms lease is trusted for 295 ms from its request (the drift allowance): the abort comes
    // when what was left of that has passed, not at once.
    expect(body.afterMs).toBeGreaterThanOrEqual(Number(body.trustedMs) - 5);
    expect(body.trustedMs).toBeGreaterThan(0);
    expect(body.afterMs).toBeLessThan(1_000);
  });

  it("createFencedStore: after a newer holder's claim, the older holder's write is refused", async () => {
    const body = await json<{ stale: { highestFence: number }; read: { value: unknown; fence: number }; newerFence: number }>(post("/store"));
    expect(body.stale).toEqual({ highestFence: body.newerFence });
    expect(body.read).toEqual({ value: { paid: true }, fence: body.newerFence });
  });
});

describe("fencedFetch in the Edge Runtime", () => {
  it("sends the lease's fence in the Fencing-Token header", async () => {
    const body = await json<{ status: number; sentFence: number; leaseFence: number }>(post("/fenced/plain"));
    expect(body).toEqual({ status: 200, sentFence: body.leaseFence, leaseFence: expect.any(Number) });
  });

  // edge-runtime's AbortSignal has no any(), which fencedFetch uses where it can to join the caller's
  // signal (or a Request's) with the lease's.
  it.each(["signal", "request"])("given a %s of the caller's own, joins it with the lease's", async (how) => {
    const body = await json<{ status: number; sentFence: number; leaseFence: number }>(post(`/fenced/${how}`));
    expect(body).toEqual({ status: 200, sentFence: body.leaseFence, leaseFence: expect.any(Number) });
  });

  it("stops the request when the caller's own signal aborts", async () => {
    expect(await json(post("/fenced-abort"))).toEqual({ rejectedWithReason: true });
  });
});

describe("lockGuard in a Hono app in the Edge Runtime", () => {
  it("lets one request in, answers a concurrent one 423, and releases once the body is sent", async () => {
    const first = post("/jobs/a1?holdMs=600");
    await sleep(200);
    const second = await post("/jobs/a1");
    expect(second.status).toBe(423);
    expect(Number(second.headers.get("Retry-After"))).toBeGreaterThanOrEqual(4);
    const { fence } = await json<{ fence: number }>(first);
    expect(await json(call("/jobs/a1"))).toMatchObject({ held: false, fence });
    expect((await post("/jobs/a1")).status).toBe(200);
  });

  // lockGuard hands acquire() the request's signal, which edge-runtime's Request makes with Node's
  // AbortController: no instance of the VM's AbortSignal (it answered 500 while options.ts asked for one).
  it.each(["poll", "push"])("with waitMs and wake: %s, waits for the holder and then gets in", async (route) => {
    // Read at once: lockGuard holds the lock until the holder's body has been sent.
    const holder = json<{ fence: number }>(post(`/jobs/b-${route}?holdMs=600`));
    await sleep(200);
    const waiter = await post(`/jobs/b-${route}/${route}`);
    const answer = { status: waiter.status, body: (await waiter.json()) as { fence: number } };
    expect(answer).toEqual({ status: 200, body: { fence: expect.any(Number) } });
    expect(answer.body.fence).toBeGreaterThan((await holder).fence);
  });
});
