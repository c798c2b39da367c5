// npm run demo: the ticket sale in real workerd against real Redis. Many buyers, few tickets,
// and one buyer whose request pauses past its lease before writing: the fence must refuse it.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startLocalUpstash } from "../src/local/index.ts";
import { startWorker, type StartedWorker } from "./worker-runtime.ts";

export interface DemoOptions {
  buyers: number;
  tickets: number;
  leaseMs: number;
}

export interface DemoResult {
  sold: number;
  oversold: number;
  remaining: number;
  turnedAway: number;
  buyersTurnedAway: number;
  soldOut: number;
  staleRejected: number;
  /** 503s with Retry-After: Redis failed or answered too late for the lease (a loaded machine); buyers retry. */
  unavailable: number;
  /** Each unexpected answer, as status and body. */
  errors: string[];
  seconds: number;
}

const root = new URL("..", import.meta.url);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function applyMigrations(worker: StartedWorker): Promise<void> {
  const db = await worker.mf.getD1Database("DB");
  const dir = new URL("worker/migrations/", root);
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const text = readFileSync(new URL(file, dir), "utf8").replace(/--.*$/gm, "");
    for (const statement of text.split(";").map((s) => s.trim()).filter(Boolean)) await db.prepare(statement).run();
  }
}

type Outcome = "bought" | "soldOut";

/** The fields the worker's answers carry; an answer that is not JSON (a proxy's, a crash's) has none. */
function parsed(text: string): { type?: string; soldOut?: boolean } {
  try {
    return JSON.parse(text) ?? {};
  } catch {
    return {};
  }
}

/** One buyer: retries while turned away (423) or told to retry (503) until it buys or the event is sold out. */
async function buyer(worker: StartedWorker, tally: DemoResult, pauseMs = 0): Promise<Outcome> {
  let turnedAway = false;
  for (let attempt = 0; attempt < 2_000; attempt++) {
    const response = await worker.fetch("/events/gig/buy", { method: "POST", headers: pauseMs ? { "x-demo-pause-ms": String(pauseMs) } : {} });
    const text = await response.text();
    const body = parsed(text);
    pauseMs = 0; // only the first request pauses
    if (response.status === 200) return "bought";
    if (response.status === 409 && body.soldOut) return "soldOut";
    if (response.status === 409 && body.type?.endsWith("stale-fence")) tally.staleRejected++;
    else if (response.status === 423) {
      tally.turnedAway++;
      if (!turnedAway) tally.buyersTurnedAway++;
      turnedAway = true;
    } else if (response.status === 503 && response.headers.has("retry-after")) tally.unavailable++;
    else tally.errors.push(`${response.status} ${text.slice(0, 300)}`);
    // Jittered, so retrying buyers do not come back in waves; a 503 says Retry-After: 1.
    await sleep((response.status === 503 ? 1_000 : 300) + Math.random() * 600);
  }
  throw new Error("a buyer gave up after 2,000 attempts");
}

/** Runs the whole sale and reports what happened; starts and stops everything it needs. */
export async function runDemo({ buyers, tickets, leaseMs }: DemoOptions): Promise<DemoResult> {
  const upstash = await startLocalUpstash();
  const worker = await startWorker(new URL("worker/index.ts", root), {
    d1Databases: ["DB"],
    bindings: { UPSTASH_REDIS_REST_URL: upstash.url, UPSTASH_REDIS_REST_TOKEN: upstash.token, LEASE_MS: String(leaseMs), DEMO_PAUSE: "on" },
  });
  try {
    await applyMigrations(worker);
    await worker.fetch("/events/gig", { method: "PUT", body: JSON.stringify({ name: "The Fences, live", stock: tickets }) });
    const tally: DemoResult = { sold: 0, oversold: 0, remaining: 0, turnedAway: 0, buyersTurnedAway: 0, soldOut: 0, staleRejected: 0, unavailable: 0, errors: [], seconds: 0 };
    const started = performance.now();
    // The slow buyer goes first and holds the lock, then pauses past its lease before writing.
    const slow = buyer(worker, tally, leaseMs + 1_000);
    await sleep(100);
    const outcomes = await Promise.all([slow, ...Array.from({ length: buyers - 1 }, () => buyer(worker, tally))]);
    tally.seconds = (performance.now() - started) / 1000;
    tally.sold = outcomes.filter((o) => o === "bought").length;
    tally.soldOut = outcomes.length - tally.sold;
    const event = (await (await worker.fetch("/events/gig")).json()) as { remaining: number };
    tally.remaining = event.remaining;
    tally.oversold = Math.max(0, tally.sold - tickets, -event.remaining);
    return tally;
  } finally {
    await worker.dispose();
    await upstash.close();
  }
}

/** What must hold for the sale to be correct; empty when it all holds. */
export function brokenInvariants(result: DemoResult, { tickets }: DemoOptions): string[] {
  const broken: string[] = [];
  if (result.oversold !== 0) broken.push(`oversold ${result.oversold} tickets`);
  if (result.sold !== tickets) broken.push(`sold ${result.sold} of ${tickets} tickets`);
  if (result.remaining !== tickets - result.sold) broken.push(`D1 says ${result.remaining} left after selling ${result.sold}`);
  if (result.staleRejected < 1) broken.push("the paused buyer's stale write was not refused");
  return broken;
}

export function table(result: DemoResult, options: DemoOptions): string {
  const rows: [string, string | number][] = [
    ["tickets sold", `${result.sold} of ${options.tickets}`],
    ["oversold (must be 0)", result.oversold],
    ["left in D1", result.remaining],
    ["buyers turned away with 423 (at least once)", `${result.buyersTurnedAway} of ${options.buyers}`],
    ["423 answers in all (buyers retry)", result.turnedAway],
    ["buyers who found it sold out", result.soldOut],
    ["stale writes refused by the fence", result.staleRejected],
    ["503 answers, Redis too slow (buyers retry)", result.unavailable],
    ["other errors", result.errors.length],
    ["wall time", `${result.seconds.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const counts = new Map<string, number>();
  for (const error of result.errors) counts.set(error, (counts.get(error) ?? 0) + 1);
  const errors = [...counts].map(([error, n]) => `\n    ${n}x ${error}`).join("");
  return rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join("\n") + (errors && `\n  other errors, by answer:${errors}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options: DemoOptions = { buyers: 200, tickets: 50, leaseMs: 1_000 };
  console.log(`Ticket sale in workerd: ${options.buyers} buyers, ${options.tickets} tickets, ${options.leaseMs} ms leases;`);
  console.log(`the first buyer pauses ${options.leaseMs + 1_000} ms after reading the stock, past its lease.\n`);
  const result = await runDemo(options);
  console.log(table(result, options));
  const broken = brokenInvariants(result, options);
  console.log(broken.length ? `\nFAILED: ${broken.join("; ")}` : "\nAll invariants hold: no ticket sold twice, the stale write was refused.");
  process.exit(broken.length ? 1 : 0);
}
