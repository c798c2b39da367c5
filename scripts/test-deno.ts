// Runs the Deno suite (test/deno/) against a local Upstash-compatible server, with the real
// @upstash/redis client and the library's source as is. Run by Node 22: `node scripts/test-deno.ts`
// (extra arguments go to `deno test`, e.g. `node scripts/test-deno.ts --filter reentrant`).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalUpstash } from "../src/local/index.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

/** The deno binary of the `deno` dev dependency; one on PATH only when it is not installed. */
function denoBinary(): string {
  const local = join(root, "node_modules", ".bin", "deno");
  return existsSync(local) ? local : "deno";
}

// Only what the suite needs: its own HTTP to the loopback (the local server and the apps it
// serves with Deno.serve on port 0) and the two variables Redis.fromEnv() reads.
// @upstash/redis also looks at a few platform variables for its telemetry header; without
// permission Deno answers those as unset.
const ENV_VARS = ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"];
const PERMISSIONS = ["--allow-net=127.0.0.1", `--allow-env=${ENV_VARS.join(",")}`, "--ignore-env"];
// npm packages come from node_modules (deno.json: "nodeModulesDir": "manual"); nothing remote.
const OFFLINE = ["--no-remote"];

/** A hung test (say, a request that never completes) fails the run instead of stalling CI. */
const TIMEOUT_MS = 120_000;

const server = await startLocalUpstash();
let exitCode = 1;
try {
  exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(denoBinary(), ["test", ...PERMISSIONS, ...OFFLINE, ...process.argv.slice(2), "test/deno/"], {
      cwd: root,
      stdio: "inherit",
      env: {
        ...process.env,
        UPSTASH_REDIS_REST_URL: server.url,
        UPSTASH_REDIS_REST_TOKEN: server.token,
        // No network beyond the loopback (no upgrade check), and a missing permission fails
        // the test instead of prompting.
        DENO_NO_UPDATE_CHECK: "1",
        DENO_NO_PROMPT: "1",
      },
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward).on("SIGTERM", forward);
    const watchdog = setTimeout(() => {
      console.error(`test-deno: deno test still running after ${TIMEOUT_MS / 1000} s; stopping it`);
      child.kill("SIGKILL");
    }, TIMEOUT_MS);
    child.on("error", (error) => reject(new Error(`could not start ${denoBinary()}: ${error.message}`)));
    child.on("exit", (code) => {
      clearTimeout(watchdog);
      process.off("SIGINT", forward).off("SIGTERM", forward);
      resolve(code ?? 1);
    });
  });
} catch (error) {
  console.error(`test-deno: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await server.close();
}
process.exit(exitCode);
