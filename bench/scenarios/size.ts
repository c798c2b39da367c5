import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { measureAll, type Measured } from "../../scripts/size.ts";
import { progress } from "../harness/timing.ts";

/** The peers, bundled as an app would bundle them: their Redis clients are the app's, not theirs. */
const PEERS = ["@upstash/lock", "redlock", "redis-semaphore"];
const CLIENTS = ["@upstash/redis", "ioredis"];

/** The bundle sizes `npm run size` reports, and the peers' measured the same way (esbuild, minified, gzip -9). */
export async function runSize(): Promise<Measured[]> {
  progress("bundle sizes");
  return [...(await measureAll()), ...(await Promise.all(PEERS.map(peerSize)))];
}

async function peerSize(peer: string): Promise<Measured> {
  const result = await build({
    stdin: { contents: `export * from ${JSON.stringify(peer)};`, resolveDir: process.cwd() },
    // platform node: redlock and redis-semaphore import Node's built-ins (they do not run on the edge).
    bundle: true, minify: true, write: false, format: "esm", platform: "node", external: CLIENTS, logLevel: "silent",
  });
  const code = result.outputFiles[0]?.contents ?? new Uint8Array();
  return { name: `peer: ${peer} (${CLIENTS.join(", ")} and Node built-ins external)`, bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, budgetBytes: undefined };
}
