// The README's quick starts as a newcomer runs them: `npm run worker:dev` (the example Worker in
// wrangler dev) and `npm run deno:example` (the Deno example), each against a fresh local server,
// answering requests, and stopping cleanly on Ctrl-C (or a closed terminal).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { freePort } from "../../../src/local/free-port.ts";
import { until } from "../../support/until.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

/** Runs a scripts/ entry with PORT set, hands its base URL to `use`, then stops it as Ctrl-C (or `signal`) would. */
async function running(script: string, use: (base: string) => Promise<void>, signal: NodeJS.Signals = "SIGINT"): Promise<number | null> {
  const port = await freePort();
  const child = spawn(process.execPath, [`scripts/${script}`], { cwd: root, env: { ...process.env, PORT: String(port) }, stdio: "ignore" });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  try {
    const base = `http://127.0.0.1:${port}`;
    // wrangler and deno take a few seconds to start; a busy machine may take many more.
    await until(async () => (await fetch(base).then(() => true, () => false)) || child.exitCode !== null, 90_000);
    expect(child.exitCode).toBeNull();
    await use(base);
  } finally {
    child.kill(signal);
  }
  return exited;
}

describe("quick starts", () => {
  it("npm run worker:dev serves the ticket sale in wrangler dev", { timeout: 150_000 }, async () => {
    const code = await running("worker-dev.ts", async (base) => {
      const event = `quick-${crypto.randomUUID().slice(0, 8)}`;
      const created = await fetch(`${base}/events/${event}`, { method: "PUT", body: JSON.stringify({ name: "Show", stock: 2 }) });
      // Read to its end: the guard holds the lock until the body has been sent.
      expect(await created.json()).toMatchObject({ id: event, stock: 2, remaining: 2 });
      const bought = await fetch(`${base}/events/${event}/buy`, { method: "POST" });
      expect(await bought.json()).toMatchObject({ seat: 2, remaining: 1 });
    });
    expect(code).toBe(0);
  });

  // Stopped as a closed terminal stops it: Node would die of SIGHUP, leaving the app and redis-server running.
  it("npm run deno:example serves the job runner in Deno, and stops cleanly on SIGHUP", { timeout: 150_000 }, async () => {
    const code = await running("deno-example.ts", async (base) => {
      const run = await fetch(`${base}/jobs/nightly/run`, { method: "POST" });
      expect(await run.json()).toMatchObject({ job: "nightly", runs: 1 });
    }, "SIGHUP");
    expect(code).toBe(0);
  });
});
