import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

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
  }, 20_000);

  it("at once when the Redis behind it has gone away", async () => {
    const ms = await lingerAfterClose(`
      const redisServer = await startRedisServer();
      const local = await startLocalUpstash({ redisUrl: redisServer.url });
      await redisServer.stop();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await local.close();`);
    expect(ms).toBeLessThan(1_000);
  }, 20_000);
});
