// npm run worker:dev: the example Worker (worker/index.ts) in `wrangler dev`, against the local
// Upstash-compatible server and a local D1 with its migrations applied. PORT sets its port (8787).
import { execFileSync } from "node:child_process";
import { root, runWithLocalUpstash } from "./local-dev.ts";

const wrangler = `${root}node_modules/.bin/wrangler`;
const port = process.env.PORT ?? "8787";
// Offline: wrangler would otherwise ask whether to send usage metrics, and try to.
const env = { WRANGLER_SEND_METRICS: "false" };

await runWithLocalUpstash(async (server) => {
  execFileSync(wrangler, ["d1", "migrations", "apply", "fencelock-tickets", "--local"], {
    cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit"],
  });
  console.error(`# worker:dev: http://127.0.0.1:${port} (try PUT /events/gig, then POST /events/gig/buy, as the README shows); Ctrl-C stops`);
  const vars = [`UPSTASH_REDIS_REST_URL:${server.url}`, `UPSTASH_REDIS_REST_TOKEN:${server.token}`];
  return { command: wrangler, args: ["dev", "--ip", "127.0.0.1", "--port", port, ...vars.flatMap((v) => ["--var", v])], env };
});
