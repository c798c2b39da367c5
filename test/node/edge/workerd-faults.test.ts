import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startWorker, type StartedWorker } from "../../../scripts/worker-runtime.ts";
import { createLocks } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

// Guarded routes in real workerd under faults: a wait that gives up, a client that goes away
// mid-stream, a Redis that is slow, failing or gone (through a proxy in front of the local server).
const PREFIX = uniquePrefix("workerd-faults");
let worker: StartedWorker;
let proxy: Server;
/** What the proxy does to the worker's requests to Redis (event streams are not used here). */
const fault = { mode: "pass" as "pass" | "slow" | "error" | "down" };

beforeAll(async () => {
  const { url, token } = inject("upstash");
  proxy = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const mode = fault.mode;
    if (mode === "down") return req.socket.destroy();
    if (mode === "error") {
      res.writeHead(500, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: "ERR injected" }));
    }
    // Forwarded at once: a slow reply, not a slow request (Redis has done the work).
    const upstream = await fetch(new URL(req.url ?? "/", url), {
      method: "POST",
      headers: { authorization: String(req.headers.authorization), "content-type": "application/json",
        "upstash-encoding": String(req.headers["upstash-encoding"] ?? "") },
      body: Buffer.concat(chunks),
    });
    const text = await upstream.text();
    if (mode === "slow") await sleep(1_500);
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(text);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  worker = await startWorker(new URL("../../workers/faults/worker.ts", import.meta.url), {
    bindings: {
      UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, PREFIX,
      FAULTY_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    },
  });
});
afterAll(async () => {
  await worker?.dispose();
  proxy?.closeAllConnections();
  proxy?.close();
});

/** The same lock set from Node (5 s leases, as the worker's), to hold locks and look at them. */
const locks = () => createLocks({ redis: upstash(), prefix: PREFIX, leaseMs: 5_000 });

describe("a guarded request in workerd that waited for a busy lock and gave up (423)", () => {
  // workerd cancels what a request left running once its response is sent; the guards hand the
  // give-back of a place in line (or of a handover never received) to ctx.waitUntil.
  it.each(["poll", "push"])("%s: has left the line, so the holder's release leaves the lock free for others", async (mode) => {
    const node = locks();
    const name = `job:gave-up-${mode}`;
    const holder = await node.acquire(name);
    const response = await worker.fetch(`/wait/${mode}/gave-up-${mode}`, { method: "POST" });
    expect(response.status).toBe(423);
    await sleep(200); // well under the 2 s a waiter keeps its place after an attempt
    const waiting = (await node.inspect(name)).waiters;
    expect(await holder.release()).toBe("released");
    // Free for anyone now; a waiter still in line would be served first (poll) or handed it (push).
    const next = await node.tryAcquire(name);
    expect({ waiting, free: next !== null, state: await node.inspect(name) }).toMatchObject({ waiting: 0, free: true });
    await next?.release();
  });
});

describe("a guarded streamed response in workerd", () => {
  it('with release: "waitUntil", releases once a finite body has been read', async () => {
    const node = locks();
    const response = await worker.fetch("/finite/finite");
    expect(await response.text()).toBe("chunk 0\nchunk 1\nchunk 2\n");
    await until(async () => !(await node.inspect("job:finite")).held, 1_000);
  });
});

/**
 * Runs a wait that gives up (which sends leave.lua) in the worker, as any isolate that has served a
 * few requests has: the script SHA-1s are then known, and a give-back goes out without waiting on
 * Web Crypto. From a cold isolate the give-back of the "slow" case below happens to reach Redis.
 */
async function warmIsolate(node: ReturnType<typeof locks>): Promise<void> {
  const holder = await node.acquire("job:warm-up");
  await (await worker.fetch("/wait/poll/warm-up", { method: "POST" })).arrayBuffer();
  await holder.release();
}

describe("a guarded request in workerd with Redis slow, failing or gone", () => {
  it.each(["slow", "error", "down"] as const)("%s: 503 within timeoutMs (500 ms) and no lock left held", async (mode) => {
    const node = locks();
    await warmIsolate(node);
    fault.mode = mode;
    try {
      const started = performance.now();
      const response = await worker.fetch(`/faulty/r-${mode}`, { method: "POST" });
      expect(response.status).toBe(503);
      expect(response.headers.get("Retry-After")).toBe("1");
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      fault.mode = "pass";
    }
    // "slow": the acquire landed and only its reply was late; its give-back must free the lock.
    await until(async () => !(await node.inspect(`job:r-${mode}`)).held, 1_000);
  });

  it("a token with a line break: the error says so, and never holds the token", async () => {
    const { message } = (await (await worker.fetch("/two-line-token", { method: "POST" })).json()) as { message: string };
    expect(message).not.toMatch(/SECRET|first-line/);
    expect(message).toMatch(/the token has a line break or control character/);
  });

  it("a lease lost mid-handler: heartbeat throws LockLostError, the request ends with onError's 500", async () => {
    const response = await worker.fetch("/lost/lost", { method: "POST" });
    expect({ status: response.status, body: await response.json() }).toEqual({ status: 500, body: { error: "LockLostError" } });
  });
});

describe("a lease's clock in workerd (time moves only on I/O there)", () => {
  it("its signal aborts when a 300 ms lease lapses, not before, and remainingMs() is then 0", async () => {
    const lapsed = (await (await worker.fetch("/lapse/lapse-short?leaseMs=300", { method: "POST" })).json()) as
      { aborted: string; afterMs: number; remainingMs: number };
    expect(lapsed).toMatchObject({ aborted: "aborted", remainingMs: 0 });
    // About 295 ms less the acquire's round trip; timers run late on a loaded machine (308 once in CI).
    expect(lapsed.afterMs).toBeLessThan(1_000);
    const live = (await (await worker.fetch("/lapse/lapse-long?leaseMs=5000&waitMs=100", { method: "POST" })).json()) as
      { aborted: string; remainingMs: number };
    expect(live.aborted).toBe("not aborted");
    expect(live.remainingMs).toBeGreaterThan(4_000);
  });
});
