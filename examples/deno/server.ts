/**
 * A job runner on Deno with fencelock: `POST /jobs/:id/run` runs a job at most one at a time
 * per id (a concurrent call gets `423 Locked` with `Retry-After`), and the job's result is
 * written with the lease's fence, so a run that stalled past its lease cannot overwrite the
 * run that came after it.
 *
 *   npx fencelock dev          # a local Upstash-compatible server; prints the two variables
 *   export UPSTASH_REDIS_REST_URL=... UPSTASH_REDIS_REST_TOKEN=...
 *   deno run --allow-net --allow-env examples/deno/server.ts
 *   curl -X POST localhost:8000/jobs/nightly/run   # {"job":"nightly","fence":...,"runs":1}
 *   curl localhost:8000/jobs/nightly
 *
 * `--allow-env` rather than `--allow-env=UPSTASH_REDIS_REST_URL,...`: Redis.fromEnv() also
 * reads a few platform variables (UPSTASH_DISABLE_TELEMETRY, VERCEL, AWS_REGION ...). With a
 * narrow list add `--ignore-env`, which answers the others as unset.
 *
 * In this repository "fencelock" is mapped to ./src by deno.json; in an app, map it to
 * "npm:fencelock" next to "npm:@upstash/redis" and "npm:hono".
 */
import { Redis } from "@upstash/redis";
import { Hono } from "hono";
import {
  createFencedStore, createLocks, LockLostError, StaleFenceError, type Lease, type RedisClient,
} from "fencelock";
import { lockGuard, type LockVariables } from "fencelock/hono";

/** What the store keeps per job. */
export interface JobRecord {
  runs: number;
  lastRunAt: string;
}

export interface JobAppOptions {
  redis: RedisClient;
  /** Key namespace (default "jobs"). */
  prefix?: string;
  /** Lease per run (default 10 s); the work heartbeats to keep it. */
  leaseMs?: number;
  /** The job itself; by default a few steps of simulated work. */
  work?: (job: string, lease: Lease) => Promise<void>;
}

/** The app without a server, so it can be served anywhere (Deno.serve below, or a test). */
export function createApp({ redis, prefix = "jobs", leaseMs = 10_000, work = simulatedWork }: JobAppOptions) {
  const locks = createLocks({ redis, prefix, leaseMs });
  const store = createFencedStore({ redis, prefix });
  const app = new Hono<{ Variables: LockVariables }>();

  app.post("/jobs/:id/run", lockGuard({ locks, name: (c) => `job:${c.req.param("id")}` }), async (c) => {
    const job = c.req.param("id");
    const lease = c.get("lease");
    // Claim the fence and read in one step: from now on no older run can write this job.
    const previous = await store.read<JobRecord>(`job:${job}`, { fence: lease.fence });
    await work(job, lease);
    const record: JobRecord = { runs: (previous?.value.runs ?? 0) + 1, lastRunAt: new Date().toISOString() };
    // Refused with StaleFenceError if a newer run took over while this one was stalled.
    await store.write(`job:${job}`, record, lease.fence);
    return c.json({ job, fence: lease.fence, runs: record.runs });
  });

  app.get("/jobs/:id", async (c) => {
    const job = c.req.param("id");
    const stored = await store.read<JobRecord>(`job:${job}`);
    if (!stored) return c.json({ error: `job ${job} has never run` }, 404);
    return c.json({ job, fence: stored.fence, ...stored.value });
  });

  app.onError((error, c) => {
    if (error instanceof StaleFenceError) {
      return c.json({ error: "a newer run took over; this run's result was discarded", highestFence: error.highestFence }, 409);
    }
    if (error instanceof LockLostError) return c.json({ error: "the run lost its lease and stopped" }, 409);
    console.error(error);
    return c.json({ error: "internal error" }, 500);
  });
  return app;
}

const STEP_MS = 100;

/**
 * Work in steps: stops as soon as the lease is lost, and heartbeats when half of it is used up,
 * or sooner if what is left might not outlast two more steps (a short lease, a slow machine).
 */
async function simulatedWork(_job: string, lease: Lease): Promise<void> {
  const leaseMs = lease.remainingMs();
  for (let step = 0; step < 3; step++) {
    await delay(STEP_MS, lease.signal); // real work passes lease.signal to fetch() the same way
    if (lease.remainingMs() < Math.max(leaseMs / 2, 2 * STEP_MS)) await lease.heartbeat();
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

if (import.meta.main) {
  const app = createApp({ redis: Redis.fromEnv() });
  Deno.serve({ port: Number(Deno.env.get("PORT") ?? 8000) }, app.fetch);
}
