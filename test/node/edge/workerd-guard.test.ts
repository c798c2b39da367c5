import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startWorker, type StartedWorker } from "../../../scripts/worker-runtime.ts";
import { STALE_FENCE_PROBLEM } from "../../../src/fencing/http/problem.ts";
import { gzipUpstream } from "../../support/gzip-upstream.ts";
import { uniquePrefix } from "../../support/upstash.ts";

/** A blob service whose writes answer 409: a stale-fence problem, or a large conflict of its own. */
const LARGE_CONFLICT = JSON.stringify({ conflict: "x".repeat(200_000) });
let blobs: Server;
let gzip: Awaited<ReturnType<typeof gzipUpstream>>;

// lockGuard, guardFetch and fencedFetch inside real workerd, against real Redis through the local server.
let worker: StartedWorker;
beforeAll(async () => {
  blobs = createServer((request, response) => {
    const stale = request.url === "/stale";
    response.writeHead(409, { "content-type": stale ? "application/problem+json" : "application/json" });
    response.end(stale ? JSON.stringify({ type: STALE_FENCE_PROBLEM, status: 409, highestFence: 123 }) : LARGE_CONFLICT);
  });
  await new Promise<void>((resolve) => blobs.listen(0, "127.0.0.1", resolve));
  gzip = await gzipUpstream();
  const { url, token } = inject("upstash");
  worker = await startWorker(new URL("../../workers/guard/worker.ts", import.meta.url), {
    bindings: {
      UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, PREFIX: uniquePrefix("workerd"),
      BLOBS_URL: `http://127.0.0.1:${(blobs.address() as AddressInfo).port}`,
      GZIP_URL: gzip.url,
    },
  });
});
afterAll(async () => {
  await worker?.dispose();
  blobs?.closeAllConnections();
  blobs?.close();
  gzip?.close();
});

describe("a guarded proxy of a compressed upstream in workerd", () => {
  it("passes on the whole body, as the same route unguarded does, in lockGuard and guardFetch", async () => {
    const lengths = {
      plain: (await (await worker.fetch("/gzip")).text()).length,
      lockGuard: (await (await worker.fetch("/gzip/report")).text()).length,
      guardFetch: (await (await worker.fetch("/plain-gzip")).text()).length,
    };
    const whole = gzip.text.length;
    expect(lengths).toEqual({ plain: whole, lockGuard: whole, guardFetch: whole });
  });
});

describe("fencedFetch in workerd", () => {
  it("turns a stale-fence 409 into StaleFenceError, and hands back any other 409 whole", async () => {
    expect(await (await post("/fenced/stale")).json()).toMatchObject({ error: "StaleFenceError", highestFence: 123 });
    expect(await (await post("/fenced/large")).json()).toMatchObject({
      status: 409, length: LARGE_CONFLICT.length, head: LARGE_CONFLICT.slice(0, 8), url: expect.stringMatching(/\/large$/),
    });
  });
});

const post = (path: string) => worker.fetch(path, { method: "POST" });

describe.each(["/jobs", "/plain"])("%s: one request at a time per name", (base) => {
  it("lets one request in and answers a concurrent one 423 with Retry-After", async () => {
    const first = post(`${base}/a1?holdMs=1500`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await post(`${base}/a1`);
    expect(second.status).toBe(423);
    expect(second.headers.get("Content-Type")).toBe("application/problem+json");
    // The holder's 5 s lease has 4-5 s left: Retry-After says so, in whole seconds.
    expect(Number(second.headers.get("Retry-After"))).toBeGreaterThanOrEqual(4);
    expect(Number(second.headers.get("Retry-After"))).toBeLessThanOrEqual(5);
    expect(await second.json()).toMatchObject({ status: 423, title: "Locked" });
    expect((await first).status).toBe(200);
  });

  it("releases the lock after the handler, so the next request gets in with a higher fence", async () => {
    const a = (await (await post(`${base}/a2`)).json()) as { fence: number };
    await new Promise((resolve) => setTimeout(resolve, 50)); // "waitUntil" release may still be in flight
    const b = (await (await post(`${base}/a2`)).json()) as { fence: number };
    expect(b.fence).toBeGreaterThan(a.fence);
  });
});

describe("lockGuard in workerd", () => {
  it("releases after a throwing handler", async () => {
    expect((await post("/jobs/b1/fail")).status).toBe(500);
    expect(await (await worker.fetch("/jobs/b1")).json()).toMatchObject({ held: false });
    expect((await post("/jobs/b1")).status).toBe(200);
  });

  it("releases after a HEAD request to a guarded GET route", async () => {
    expect((await worker.fetch("/reports/b4", { method: "HEAD" })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await (await worker.fetch("/jobs/b4")).json()).toMatchObject({ held: false });
    expect((await worker.fetch("/reports/b4")).status).toBe(200);
  });

  it("with waitMs > 0 waits for the holder and then succeeds", async () => {
    const holder = post("/jobs/b2?holdMs=600");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    const patient = await post("/jobs/b2/patient");
    expect(patient.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    const [h, p] = [(await (await holder).json()) as { fence: number }, (await patient.json()) as { fence: number }];
    expect(p.fence).toBeGreaterThan(h.fence);
  });

  it("lets a long handler heartbeat through the lease", async () => {
    const body = (await (await post("/jobs/b3/heartbeat")).json()) as { remainingMs: number; aborted: boolean };
    expect(body.aborted).toBe(false);
    expect(body.remainingMs).toBeGreaterThan(4_000);
  });
});

describe("push wake-ups in workerd", () => {
  it("lockGuard, by default, is handed the lock on a server-sent-events stream, with no attempt after the release", async () => {
    const holder = post("/jobs/d1?holdMs=600");
    await new Promise((resolve) => setTimeout(resolve, 150));
    const pushed = await post("/push/d1");
    expect(pushed.status).toBe(200);
    const h = (await (await holder).json()) as { fence: number };
    const p = (await pushed.json()) as { fence: number; attempts: number; state: { held: boolean; fence: number; holds: number } };
    expect(p.fence).toBeGreaterThan(h.fence);
    // The first attempt and the one after the stream confirmed; the next would be a second later.
    expect(p.attempts).toBe(2);
    expect(p.state).toMatchObject({ held: true, fence: p.fence, holds: 1 });
  });

  it("hands the lock to each of two requests that wait in turn through one lock set, each on a stream of its own", async () => {
    for (const round of [1, 2]) {
      const holder = post("/jobs/d2?holdMs=600");
      await new Promise((resolve) => setTimeout(resolve, 150));
      const waited = (await (await post("/shared/d2")).json()) as { fence: number; attempts: number; streams: number };
      const h = (await (await holder).json()) as { fence: number };
      expect(waited.fence, `round ${round}`).toBeGreaterThan(h.fence);
      // Not the first request's stream: nothing may outlive a request on Workers.
      expect(waited.streams, `round ${round}`).toBe(1);
      expect(waited.attempts, `round ${round}`).toBe(2);
    }
  });
});

describe("concurrent waits on one lock set in workerd", () => {
  // A stream belongs to the request that opened it: a wait that rode on another's would miss its handover.
  it("hands the lock to a request that waits while another one's wait is open, on a stream of its own", async () => {
    const holders = [post("/jobs/d3?holdMs=600"), post("/jobs/d4?holdMs=1500")];
    await new Promise((resolve) => setTimeout(resolve, 150));
    const first = post("/shared/d3");
    await new Promise((resolve) => setTimeout(resolve, 250));
    const second = (await (await post("/shared/d4")).json()) as { fence: number; attempts: number; streams: number };
    expect((await first).status).toBe(200);
    const [, h] = (await Promise.all(holders.map(async (holder) => (await holder).json()))) as { fence: number }[];
    expect(second.fence).toBeGreaterThan(h!.fence);
    expect(second.streams).toBe(1);
  });
});

describe("a lock set built in a Worker's global scope", () => {
  // Workers refuse random values there: a lock set that drew an id at once kept the Worker from loading.
  it("loads, and takes and releases locks in requests", async () => {
    const name = crypto.randomUUID();
    const first = (await (await post(`/global/${name}`)).json()) as { fence: number };
    const second = (await (await post(`/global/${name}`)).json()) as { fence: number };
    expect(second.fence).toBeGreaterThan(first.fence);
  });
});

describe("guardFetch in workerd", () => {
  it("releases after a throwing handler (in the background via waitUntil)", async () => {
    expect((await worker.fetch("/plain/c1", { method: "DELETE" })).status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await (await worker.fetch("/jobs/c1")).json()).toMatchObject({ held: false });
  });
});
