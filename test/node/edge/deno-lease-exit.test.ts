// A released lease keeps no Deno process running: its signal's timer (an AbortSignal.timeout with a
// listener, before) held a script open until the lease's deadline, up to leaseMs after the release.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, inject, it } from "vitest";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const deno = existsSync(`${root}node_modules/.bin/deno`) ? `${root}node_modules/.bin/deno` : "deno";

it("a Deno script that read a lease's signal ends once the lease is released, not at its 60 s deadline", { timeout: 90_000 }, async () => {
  const { url, token } = inject("upstash");
  const started = performance.now();
  const child = spawn(deno, ["run", "--allow-net=127.0.0.1", "--allow-env", "--no-remote", "test/deno/lease-exit.ts"], {
    cwd: root,
    env: { ...process.env, UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const [code] = await once(child, "exit");
  expect([code, output.trim()]).toEqual([0, "released"]);
  // Half the lease: Deno's start and compile take seconds at most, even on a busy machine.
  expect(performance.now() - started).toBeLessThan(30_000);
});
