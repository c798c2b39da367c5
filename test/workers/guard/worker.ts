// Runs inside workerd (Miniflare): lockGuard, guardFetch and fencedFetch against real Redis via the
// local server.
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { createLocks, type Locks, type RedisClient } from "../../../src/index.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { lockGuard, type LockVariables } from "../../../src/hono.ts";
import { fencedFetch } from "../../../src/http.ts";
import { guardFetch, type WaitUntil } from "../../../src/worker.ts";

interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  PREFIX: string;
  /** A service the test runs, whose writes answer 409 in the ways fencedFetch must tell apart. */
  BLOBS_URL: string;
  /** An upstream that sends its body gzipped, with the Content-Length of the gzip. */
  GZIP_URL: string;
}

function locksFor(env: Env): Locks {
  const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false });
  return createLocks({ redis, prefix: env.PREFIX, leaseMs: 5_000 });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type AppEnv = { Bindings: Env; Variables: LockVariables & { attempts: { n: number } } };
const app = new Hono<AppEnv>();
const guard = (waitMs = 0) =>
  lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name: (c) => `job:${c.req.param("id")}`, waitMs });

app.post("/jobs/:id", guard(), async (c) => {
  await sleep(Number(c.req.query("holdMs") ?? 0));
  return c.json({ fence: c.get("lease").fence });
});
app.post("/jobs/:id/patient", guard(3_000), (c) => c.json({ fence: c.get("lease").fence }));
app.post("/jobs/:id/fail", guard(), () => {
  throw new Error("handler failed");
});
app.post("/jobs/:id/heartbeat", guard(), async (c) => {
  const lease = c.get("lease");
  await sleep(200);
  await lease.heartbeat();
  return c.json({ remainingMs: lease.remainingMs(), aborted: lease.signal.aborted });
});
// A guarded route whose waiters listen on SUBSCRIBE over server-sent events (the default): the
// holder's release hands the lock to the one first in line. Its acquire attempts are counted to
// show that none follows the release.
const acquireSha1 = scriptSha1(scripts.acquire);
function countingLocks(env: Env, attempts: { n: number }, streams = { n: 0 }): Locks {
  const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false });
  const counted: RedisClient = {
    evalsha: async (sha, keys, args) => ((attempts.n += sha === (await acquireSha1) ? 1 : 0), redis.evalsha(sha, keys, args)),
    eval: (text, keys, args) => redis.eval(text, keys, args),
    subscribe: (channel) => ((streams.n += 1), redis.subscribe(channel)),
  };
  return createLocks({ redis: counted, prefix: env.PREFIX, leaseMs: 5_000 });
}
app.post(
  "/push/:id",
  lockGuard<AppEnv>({
    locks: (c) => {
      const attempts = { n: 0 };
      c.set("attempts", attempts);
      return countingLocks(c.env, attempts);
    },
    name: (c) => `job:${c.req.param("id")}`,
    waitMs: 5_000,
  }),
  async (c) => {
    const { fence } = c.get("lease");
    const state = await locksFor(c.env).inspect(`job:${c.req.param("id")}`);
    return c.json({ fence, attempts: c.get("attempts").n, state });
  },
);
// One lock set for every request of this isolate, as an app that builds it once would have: each
// request's wait must get a stream of its own, as a stream cannot serve another request.
const shared: { locks?: Locks; attempts: { n: number }; streams: { n: number } } = { attempts: { n: 0 }, streams: { n: 0 } };
app.post("/shared/:id", async (c) => {
  shared.locks ??= countingLocks(c.env, shared.attempts, shared.streams);
  const [attemptsBefore, streamsBefore] = [shared.attempts.n, shared.streams.n];
  const lease = await shared.locks.acquire(`job:${c.req.param("id")}`, { waitMs: 5_000 });
  const [attempts, streams] = [shared.attempts.n - attemptsBefore, shared.streams.n - streamsBefore];
  await lease.release();
  return c.json({ fence: lease.fence, attempts, streams });
});
// A lock set built in global scope, where Workers refuse random values and timers: its client
// reaches this request's Redis through a forwarder.
let requestRedis: RedisClient | undefined;
const forwarder: RedisClient = {
  evalsha: (sha1, keys, args) => requestRedis!.evalsha(sha1, keys, args),
  eval: (script, keys, args) => requestRedis!.eval(script, keys, args),
  subscribe: (channel) => requestRedis!.subscribe!(channel),
};
const globalLocks = createLocks({ redis: forwarder, prefix: "workerd-global", leaseMs: 5_000 });
app.post("/global/:id", async (c) => {
  requestRedis = new Redis({ url: c.env.UPSTASH_REDIS_REST_URL, token: c.env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false });
  const lease = await globalLocks.acquire(`job:${c.req.param("id")}`, { waitMs: 3_000 });
  await lease.release();
  return c.json({ fence: lease.fence });
});
app.get("/reports/:id", guard(), (c) => c.text(`report ${c.get("lease").fence}`));
// A proxy of a compressed upstream, guarded and not: the body must come out whole either way.
app.get("/gzip", (c) => fetch(c.env.GZIP_URL));
app.get("/gzip/:id", guard(), (c) => fetch(c.env.GZIP_URL));
// fencedFetch on the edge: a stale-fence 409 becomes StaleFenceError; any other comes back whole.
app.post("/fenced/:path", async (c) => {
  const lease = await locksFor(c.env).acquire(`fenced:${c.req.param("path")}`);
  try {
    const response = await fencedFetch(lease, `${c.env.BLOBS_URL}/${c.req.param("path")}`, { method: "PUT", body: "v" });
    const text = await response.text();
    return c.json({ status: response.status, url: response.url, length: text.length, head: text.slice(0, 8) });
  } catch (error) {
    return c.json({ error: error instanceof Error ? error.name : String(error), ...(error as { highestFence?: number }) });
  } finally {
    await lease.release();
  }
});
app.get("/jobs/:id", async (c) => c.json(await locksFor(c.env).inspect(`job:${c.req.param("id")}`)));
app.onError((error, c) => c.json({ error: error.message }, 500));

const plain = guardFetch<Env, WaitUntil>(
  { locks: locksFor, name: (request) => `job:${new URL(request.url).pathname.split("/")[2]}`, release: "waitUntil" },
  async (request, _env, _ctx, lease) => {
    const holdMs = Number(new URL(request.url).searchParams.get("holdMs") ?? 0);
    await sleep(holdMs);
    if (request.method === "DELETE") throw new Error("plain handler failed");
    return Response.json({ fence: lease.fence });
  },
);

const plainGzip = guardFetch<Env, WaitUntil>({ locks: locksFor, name: () => "job:plain-gzip" }, (_request, env) => fetch(env.GZIP_URL));

export default {
  fetch(request: Request, env: Env, ctx: WaitUntil) {
    const { pathname } = new URL(request.url);
    if (pathname === "/plain-gzip") return plainGzip(request, env, ctx);
    return pathname.startsWith("/plain/") ? plain(request, env, ctx) : app.fetch(request, env, ctx as Parameters<typeof app.fetch>[2]);
  },
};
