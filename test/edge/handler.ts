// Runs inside Vercel's Edge Runtime (edge-runtime's EdgeVM): the core, fencedFetch and lockGuard
// against real Redis via the local server, with @upstash/redis as a Vercel Edge build resolves it.
import { Redis } from "@upstash/redis";
import { Hono, type Context } from "hono";
import { createFencedStore, createLocks, StaleFenceError, type Locks, type RedisClient } from "../../src/index.ts";
import { lockGuard, type LockVariables } from "../../src/hono.ts";
import { fencedFetch } from "../../src/http.ts";
import { scriptSha1 } from "../../src/redis/run-script.ts";
import * as scripts from "../../src/redis/scripts.gen.ts";

/** As Vercel hands them to an edge function; the test sets them. */
declare const process: { env: Record<string, string> };
const prefix = () => process.env.PREFIX ?? "edge";
const redis = () => Redis.fromEnv({ enableTelemetry: false });
const locksWith = (client: RedisClient, leaseMs = 5_000) => createLocks({ redis: client, prefix: prefix(), leaseMs });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client that counts acquire attempts, to show that a push waiter makes none after the release,
 * and notes the channels it subscribes to, to show that the stream is closed afterwards.
 */
const acquireSha1 = scriptSha1(scripts.acquire);
function counting(attempts: { n: number }, channels: string[]): RedisClient {
  const client = redis();
  return {
    evalsha: async (sha, keys, args) => ((attempts.n += sha === (await acquireSha1) ? 1 : 0), client.evalsha(sha, keys, args)),
    eval: (text, keys, args) => client.eval(text, keys, args),
    subscribe: (channel) => (channels.push(channel), client.subscribe(channel)),
  };
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : String(error));

type AppEnv = { Variables: LockVariables };
const app = new Hono<AppEnv>();

// Acquire, heartbeat, inspect and release; `await using` gives the lease back at the block's end.
async function holdAWhile(locks: Locks) {
  await using lease = await locks.acquire("basics");
  await sleep(300);
  await lease.heartbeat();
  return { fence: lease.fence, remainingMs: lease.remainingMs(), state: await locks.inspect("basics") };
}
app.post("/basics", async (c) => {
  const locks = locksWith(redis());
  const held = await holdAWhile(locks);
  const after = await locks.inspect("basics");
  const next = await locks.acquire("basics");
  return c.json({ ...held, after, nextFence: next.fence, released: await next.release() });
});

// A contended acquire: the holder lets go after 300 ms, the waiter is woken by a push or its polls.
app.post("/contend/:wake", async (c) => {
  const wake = c.req.param("wake") === "push" ? "push" : "poll";
  const name = `contend:${wake}`;
  const holder = await locksWith(redis()).acquire(name);
  setTimeout(() => void holder.release(), 300);
  const attempts = { n: 0 };
  const channels: string[] = [];
  const started = performance.now();
  const waiter = await locksWith(counting(attempts, channels)).acquire(name, { waitMs: 5_000, wake });
  const waitedMs = performance.now() - started;
  const state = await locksWith(redis()).inspect(name);
  await waiter.release();
  return c.json({ holderFence: holder.fence, fence: waiter.fence, attempts: attempts.n, channels, waitedMs, state });
});

// lease.signal aborts by itself when a lease lapses unextended (a timer underneath), and with it a
// fencedFetch made under the lease to a service that never answers.
app.post("/lapse", async (c) => {
  const lease = await locksWith(redis(), 300).acquire("lapse");
  const started = performance.now();
  const trustedMs = lease.remainingMs();
  const fetched = await fencedFetch(lease, `${process.env.BLOBS_URL}/hang`).then(() => "answered", (error: unknown) => error);
  return c.json({
    afterMs: performance.now() - started,
    trustedMs,
    aborted: lease.signal.aborted,
    reason: errorName(lease.signal.reason),
    fetchRejectedWithReason: fetched === lease.signal.reason,
    heartbeat: await lease.heartbeat().then(() => "extended", errorName),
  });
});

// Fenced storage: a newer holder's claim shuts out the older one's write.
app.post("/store", async (c) => {
  const locks = locksWith(redis());
  const store = createFencedStore({ redis: redis(), prefix: prefix() });
  const older = await locks.acquire("invoice");
  await older.release();
  const newer = await locks.acquire("invoice");
  await store.claim("invoice", newer.fence);
  const stale = await store.write("invoice", { paid: false }, older.fence).catch((error: unknown) => error);
  await store.write("invoice", { paid: true }, newer.fence);
  await newer.release();
  return c.json({
    stale: stale instanceof StaleFenceError ? { highestFence: stale.highestFence } : errorName(stale),
    read: await store.read("invoice"), newerFence: newer.fence,
  });
});

// fencedFetch to a service the test runs: plainly, with a signal of the caller's own, or given a Request.
app.post("/fenced/:how", async (c) => {
  const lease = await locksWith(redis()).acquire("fenced");
  const url = `${process.env.BLOBS_URL}/put`;
  const how = c.req.param("how");
  try {
    const response = how === "request"
      ? await fencedFetch(lease, new Request(url, { method: "PUT", body: "v" }))
      : await fencedFetch(lease, url, { method: "PUT", body: "v", ...(how === "signal" && { signal: new AbortController().signal }) });
    return c.json({ status: response.status, sentFence: Number(await response.text()), leaseFence: lease.fence });
  } catch (error) {
    return c.json({ error: errorName(error), message: error instanceof Error ? error.message : "" });
  } finally {
    await lease.release();
  }
});

// fencedFetch to a service that never answers, given a signal of the caller's own that aborts 100 ms in.
app.post("/fenced-abort", async (c) => {
  const lease = await locksWith(redis()).acquire("fenced-abort");
  const caller = new AbortController();
  setTimeout(() => caller.abort(new Error("the caller gave up")), 100);
  const fetched = await fencedFetch(lease, `${process.env.BLOBS_URL}/hang`, { signal: caller.signal }).catch((error: unknown) => error);
  await lease.release();
  return c.json({ rejectedWithReason: fetched === caller.signal.reason });
});

// Routes guarded by lockGuard: one request at a time per job.
const guard = (waitMs = 0, wake?: "poll" | "push") =>
  lockGuard<AppEnv>({ locks: locksWith(redis()), name: (c) => `job:${c.req.param("id")}`, waitMs, wake });
const job = (c: Context<AppEnv>) => c.json({ fence: c.get("lease").fence });
app.post("/jobs/:id", guard(), async (c) => (await sleep(Number(c.req.query("holdMs") ?? 0)), job(c)));
app.post("/jobs/:id/poll", guard(3_000, "poll"), job);
app.post("/jobs/:id/push", guard(3_000, "push"), job);
app.get("/jobs/:id", async (c) => c.json(await locksWith(redis()).inspect(`job:${c.req.param("id")}`)));
app.onError((error, c) => c.json({ error: errorName(error), message: error.message }, 500));

/** A Vercel edge function: the test's fetch listener calls it with each request. */
export default function handler(request: Request): Response | Promise<Response> {
  return app.fetch(request);
}
