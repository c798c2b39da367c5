import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startLocalUpstash } from "../../../src/local/index.ts";
import { key } from "../../support/rest.ts";
import { busyScript } from "./busy-script.ts";

const LOCAL = fileURLToPath(new URL("../../../src/local/index.ts", import.meta.url));

/** Runs `body` in a fresh Node process; resolves with the ms between its "closed" line and its exit. */
async function lingerAfterClose(body: string): Promise<number> {
  const script = `import { startLocalUpstash, startRedisServer } from ${JSON.stringify(LOCAL)};\n${body}\nconsole.log("closed");`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let closedAt = 0;
  child.stdout.on("data", (chunk: Buffer) => {
    if (chunk.toString().includes("closed")) closedAt = performance.now();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const [code] = await once(child, "exit");
  clearTimeout(timer);
  expect(code).toBe(0);
  return performance.now() - closedAt;
}

describe("startLocalUpstash: close() lets the process exit", () => {
  it("at once when Redis is up", async () => {
    const ms = await lingerAfterClose(`
      const local = await startLocalUpstash();
      await local.close();`);
    expect(ms).toBeLessThan(1_000);
  });

  it("at once when the Redis behind it has gone away", async () => {
    const ms = await lingerAfterClose(`
      const redisServer = await startRedisServer();
      const local = await startLocalUpstash({ redisUrl: redisServer.url });
      await redisServer.stop();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await local.close();`);
    expect(ms).toBeLessThan(1_000);
  });
});

describe("startLocalUpstash: close() and requests in flight", () => {
  it("lets a request already running finish and answer, instead of cutting its connection", async () => {
    const local = await startLocalUpstash();
    const running = fetch(`${local.url}/`, {
      method: "POST",
      headers: { authorization: `Bearer ${local.token}` },
      body: JSON.stringify(["EVAL", busyScript(300), 1, key("in-flight")]),
    }).then(async (response) => ({ status: response.status, body: await response.text() }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    const closing = local.close();
    // Cutting it would leave the client unsure whether its write happened (and @upstash/redis retries it).
    expect(await running).toEqual({ status: 200, body: '{"result":"finished"}' });
    await closing;
    expect(performance.now() - started).toBeLessThan(1_000); // its keep-alive connection was closed too
  });

  it("cuts a request that is still unfinished after 5 s, so that close() always ends", async () => {
    const local = await startLocalUpstash();
    const { hostname, port } = new URL(local.url);
    const stalled = connect(Number(port), hostname);
    // Headers announce a body that never comes.
    stalled.write(`POST / HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${local.token}\r\ncontent-length: 100\r\n\r\n["PING"`);
    const cut = once(stalled, "close");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await local.close();
    await cut;
    expect(performance.now() - started).toBeGreaterThan(4_500);
    expect(performance.now() - started).toBeLessThan(6_500);
  });
});
