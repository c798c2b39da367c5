// The ticket sale: the overselling problem that distributed locks exist for. Each purchase is a
// read-modify-write of an event's stock, under a lock per event and fenced in D1, so that
// neither concurrent buyers nor a holder paused past its lease can sell a ticket twice.
import { Redis } from "@upstash/redis/cloudflare";
import { Hono, type Context } from "hono";
import { createLocks, StaleFenceError, type Locks } from "../src/index.ts";
import { problemResponse, staleFenceProblem } from "../src/http.ts";
import { lockGuard, type LockVariables } from "../src/hono.ts";
import { fencedClaim, fencedWrite, type SqlDatabase } from "../src/sql.ts";

export interface Env {
  DB: SqlDatabase;
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  /** Lease length per purchase in ms (default 5000). */
  LEASE_MS?: string;
  /** "on" lets a request ask to pause after reading the stock (x-demo-pause-ms), to show fencing at work. */
  DEMO_PAUSE?: string;
}

type AppEnv = { Bindings: Env; Variables: LockVariables };

interface EventRow {
  id: string;
  name: string;
  stock: number;
  remaining: number;
}

// Workers isolates serve many requests: build the lock set once per set of credentials.
let cached: { key: string; locks: Locks } | undefined;
function locksFor(env: Env): Locks {
  const key = `${env.UPSTASH_REDIS_REST_URL}|${env.UPSTASH_REDIS_REST_TOKEN}|${env.LEASE_MS ?? ""}`;
  if (cached?.key !== key) {
    const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false });
    cached = { key, locks: createLocks({ redis, prefix: "tickets", leaseMs: Number(env.LEASE_MS ?? 5_000) }) };
  }
  return cached.locks;
}

function readEvent(env: Env, id: string): Promise<EventRow | null> {
  return env.DB.prepare("SELECT id, name, stock, remaining FROM events WHERE id = ?").bind(id).first<EventRow>();
}

/** Holds the request after the stock was read, only when the deployment allows it (the demo). */
async function demoPause(c: Context<AppEnv>): Promise<void> {
  const ms = Number(c.req.header("x-demo-pause-ms") ?? 0);
  if (c.env.DEMO_PAUSE === "on" && ms > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 30_000)));
}

export const app = new Hono<AppEnv>();

app.get("/events/:id", async (c) => {
  const event = await readEvent(c.env, c.req.param("id"));
  return event ? c.json(event) : c.json({ error: "no such event" }, 404);
});

// One lock per event, for restocks as for purchases: a restock is a write like any other, and one
// that bypassed the lock or the fence would let a paused buyer's older write land after it.
const eventLock = lockGuard<AppEnv>({ locks: (c) => locksFor(c.env), name: (c) => `event:${c.req.param("id")}` });

app.put("/events/:id", eventLock, async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined);
  const { name, stock } = (typeof body === "object" && body !== null ? body : {}) as { name?: unknown; stock?: unknown };
  if (typeof name !== "string" || typeof stock !== "number" || !Number.isSafeInteger(stock) || stock < 0) {
    return c.json({ error: "expected { name: string, stock: non-negative integer }" }, 400);
  }
  const id = c.req.param("id");
  const { fence } = c.get("lease");
  // A restock under a paused buyer's older fence is refused (StaleFenceError: 409).
  await fencedWrite(c.env.DB, { table: "events", key: { id }, fence, set: { name, stock, remaining: stock }, upsert: true });
  return c.json({ id, name, stock, remaining: stock }, 201);
});

app.post("/events/:id/buy", eventLock, async (c) => {
  const id = c.req.param("id");
  const { fence } = c.get("lease");
  // Claim before reading: a paused older holder's write can no longer land after our read.
  const claimed = await fencedClaim(c.env.DB, { table: "events", key: { id }, fence });
  if (!claimed.accepted) return c.json({ error: "no such event" }, 404);
  const event = await readEvent(c.env, id);
  if (!event || event.remaining <= 0) return c.json({ soldOut: true }, 409);
  await demoPause(c);
  await fencedWrite(c.env.DB, { table: "events", key: { id }, fence, set: { remaining: event.remaining - 1 } });
  return c.json({ seat: event.remaining, fence, remaining: event.remaining - 1 });
});

app.onError((error, c) => {
  // A purchase or a restock whose lease lapsed while another request went ahead: nothing was written.
  if (error instanceof StaleFenceError) return problemResponse(staleFenceProblem(error));
  // The client gets no details; the log says what to fix (a bad LEASE_MS, a missing DB binding).
  console.error(error);
  return c.json({ error: "internal error" }, 500);
});

export default app;
