import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startWorker, type StartedWorker } from "../../../scripts/worker-runtime.ts";

// The example ticket-sale worker (worker/index.ts) in real workerd, D1 and the run's local Upstash.
let worker: StartedWorker;
const root = new URL("../../../", import.meta.url);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LEASE_MS = 1_000;

beforeAll(async () => {
  const { url, token } = inject("upstash");
  worker = await startWorker(new URL("worker/index.ts", root), {
    d1Databases: ["DB"],
    bindings: { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, LEASE_MS: String(LEASE_MS), DEMO_PAUSE: "on" },
  });
  const db = await worker.mf.getD1Database("DB");
  const dir = new URL("worker/migrations/", root);
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const text = readFileSync(new URL(file, dir), "utf8").replace(/--.*$/gm, "");
    for (const statement of text.split(";").map((s) => s.trim()).filter(Boolean)) await db.prepare(statement).run();
  }
});
afterAll(() => worker?.dispose());

const eventId = () => `evt-${crypto.randomUUID().slice(0, 8)}`;
const put = (id: string, body: string) => worker.fetch(`/events/${id}`, { method: "PUT", body });
const buy = (id: string, pauseMs = 0) =>
  worker.fetch(`/events/${id}/buy`, { method: "POST", headers: pauseMs ? { "x-demo-pause-ms": String(pauseMs) } : {} });
const remaining = async (id: string) => ((await (await worker.fetch(`/events/${id}`)).json()) as { remaining: number }).remaining;

describe("the example worker: PUT /events/:id", () => {
  it.each([["not JSON", "{nope"], ["JSON null", "null"]])("answers 400 for a body that is %s", async (_, body) => {
    const response = await put(eventId(), body);
    expect(response.status).toBe(400);
  });
});

describe("the example worker: restocking under the lock", () => {
  it("refuses the write of a buyer paused past its lease", async () => {
    const id = eventId();
    await put(id, JSON.stringify({ name: "gig", stock: 5 }));
    const slow = buy(id, LEASE_MS + 1_500);
    await sleep(LEASE_MS + 300);
    expect((await buy(id)).status).toBe(200);
    expect((await slow).status).toBe(409);
    expect(await remaining(id)).toBe(4);
  });

  it("refuses a paused buyer's write after a restock, which goes through the lock and the fence too", async () => {
    const id = eventId();
    expect((await put(id, JSON.stringify({ name: "gig", stock: 5 }))).status).toBe(201);
    // A: claims with fence F1, reads remaining = 5, then pauses well past its 1 s lease.
    const slow = buy(id, LEASE_MS + 1_500);
    await sleep(LEASE_MS + 300);
    // B: a newer holder (fence F2 > F1) buys normally: remaining 4, row fence F2.
    const b = await buy(id);
    expect(b.status).toBe(200);
    // The organiser restocks to 100 tickets while A is still paused.
    expect((await put(id, JSON.stringify({ name: "gig", stock: 100 }))).status).toBe(201);
    // A wakes and writes remaining = 5 - 1 with its old fence F1 < F2: the fence must refuse it.
    const a = await slow;
    const [aBody, bBody] = [await a.json(), await b.json()];
    expect({ status: a.status, a: aBody, b: bBody, left: await remaining(id) }).toMatchObject({ status: 409, left: 100 });
  });
});
