// npm run deno:example: examples/deno/server.ts against the local Upstash-compatible server. PORT
// sets its port (8000). Not a deno.json task: in this repository deno task resolves `deno` and
// `node` to the npm packages' binaries in node_modules/.bin, and runs them as scripts.
import { existsSync } from "node:fs";
import { root, runWithLocalUpstash } from "./local-dev.ts";

// The deno dev dependency's binary; one on PATH only when it is not installed.
const deno = existsSync(`${root}node_modules/.bin/deno`) ? `${root}node_modules/.bin/deno` : "deno";

await runWithLocalUpstash(async (server) => ({
  command: deno,
  args: ["run", "--allow-net", "--allow-env", "examples/deno/server.ts"],
  env: { UPSTASH_REDIS_REST_URL: server.url, UPSTASH_REDIS_REST_TOKEN: server.token },
}));
