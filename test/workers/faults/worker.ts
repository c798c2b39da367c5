// Runs inside workerd (Miniflare): guarded routes under faults (a busy lock that outlasts the wait,
// a slow or failing Redis), against real Redis through the local server or a proxy in front of it.
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { createLocks, type Locks } from "../../../src/index.ts";
import { lockGuard, type LockVariables } from "../../../src/hono.ts";
import { guardFetch, type WaitUntil } from "../../../src/worker.ts";

interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  PREFIX: string;
  /** A proxy in front of the local server that the test can make slow or failing. */
  FAULTY_URL: string;
}

const locksFor = (env: Env, url = env.UPSTASH_REDIS_REST_URL, timeoutMs = 3_000): Locks =>
  createLocks({
    redis: new Redis({ url, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false }),
    prefix: env.PREFIX,
    leaseMs: 5_000,
    timeoutMs,
  });

type AppEnv = { Bindings: Env; Variables: LockVariables };
const app = new Hono<AppEnv>();
const name = (c: { req: { param(key: "name"): string } }) => `job:${c.req.param("name")}`;

// Waits 300 ms for a busy lock, polling or listening for a push handover, then answers 423.
app.post("/wait/poll/:name", lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name, waitMs: 300 }), (c) =>
  c.json({ fence: c.get("lease").fence }));
app.post("/wait/push/:name", lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name, waitMs: 300, wake: "push" }), (c) =>
  c.json({ fence: c.get("lease").fence }));
// The lock taken through the faulty proxy, with a timeoutMs short enough to hit.
app.post("/faulty/:name", lockGuard<AppEnv>({ locks: (c) => locksFor(c.env, c.env.FAULTY_URL, 500), name }), (c) =>
  c.json({ fence: c.get("lease").fence }));

// A finite streamed body, released through ctx.waitUntil once it has been read to its end.
app.get("/finite/:name", lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name, release: "waitUntil" }), () => {
  let n = 0;
  return new Response(new ReadableStream<Uint8Array>({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (n === 3) return controller.close();
      controller.enqueue(new TextEncoder().encode(`chunk ${n++}\n`));
    },
  }));
});
// A handler that outlives its 300 ms lease and then heartbeats: LockLostError, a 500 from onError.
app.post("/lost/:name", lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name, leaseMs: 300 }), async (c) => {
  await new Promise((resolve) => setTimeout(resolve, 600));
  await c.get("lease").heartbeat();
  return c.json({ fence: c.get("lease").fence });
});
// A token pasted over two lines: what workerd's fetch says of it, as the lock set words it.
app.post("/two-line-token", async (c) => {
  const redis = new Redis({ url: c.env.UPSTASH_REDIS_REST_URL, token: "first-line\r\nSECRET-SECOND-LINE", retry: false, enableTelemetry: false });
  const error = await createLocks({ redis, prefix: c.env.PREFIX }).tryAcquire("job:two-line").catch((e: Error) => e);
  return c.json({ message: error instanceof Error ? error.message : "no error" });
});
app.onError((error, c) => c.json({ error: error.name }, 500));
// The lease's own signal in workerd, where the clock moves only on I/O: does it abort when the lease lapses?
app.post("/lapse/:name", async (c) => {
  const lease = await locksFor(c.env).acquire(name(c), { leaseMs: Number(c.req.query("leaseMs") ?? 300) });
  const started = performance.now();
  const aborted = await Promise.race([
    new Promise<string>((resolve) => lease.signal.addEventListener("abort", () => resolve("aborted"))),
    new Promise<string>((resolve) => setTimeout(() => resolve("not aborted"), Number(c.req.query("waitMs") ?? 2_000))),
  ]);
  return c.json({ aborted, afterMs: performance.now() - started, remainingMs: lease.remainingMs(), fence: lease.fence });
});

export default {
  fetch(request: Request, env: Env, ctx: WaitUntil) {
    return app.fetch(request, env, ctx as Parameters<typeof app.fetch>[2]);
  },
};
