// npm run worker:dev: the example Worker (worker/index.ts) in `wrangler dev`, against the local
// Upstash-compatible server and a local D1 with its migrations applied. Ctrl-C stops both.
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startLocalUpstash } from "../src/local/index.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const wrangler = `${root}node_modules/.bin/wrangler`;
const port = process.env.PORT ?? "8787";
// Offline: wrangler would otherwise ask whether to send usage metrics, and try to.
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };

const server = await startLocalUpstash();
try {
  execFileSync(wrangler, ["d1", "migrations", "apply", "fencelock-tickets", "--local"], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
} catch (error) {
  await server.close();
  throw error;
}
const vars = [`UPSTASH_REDIS_REST_URL:${server.url}`, `UPSTASH_REDIS_REST_TOKEN:${server.token}`];
const dev = spawn(wrangler, ["dev", "--ip", "127.0.0.1", "--port", port, ...vars.flatMap((v) => ["--var", v])], {
  cwd: root,
  env,
  stdio: ["ignore", "inherit", "inherit"],
});
console.error(`# worker:dev: http://127.0.0.1:${port} (try GET /events/demo), Redis through ${server.url}; Ctrl-C stops`);
const stop = () => dev.kill("SIGTERM");
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
const code = await new Promise<number>((resolve) => dev.once("exit", (exitCode) => resolve(exitCode ?? 0)));
await server.close();
process.exit(code);
