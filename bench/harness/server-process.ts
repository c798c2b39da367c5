// Child process: the local Upstash-compatible server (and its redis-server), apart from the
// benchmark's event loop, so server work never delays the clients' timers. Prints one JSON
// line with { url, token, redisUrl }, then serves until stdin closes or SIGTERM arrives.
import { startLocalUpstash } from "../../src/local/index.ts";

const server = await startLocalUpstash();
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
process.stdin.on("end", () => void stop());
process.stdin.on("close", () => void stop());
process.stdin.resume();
process.stdout.write(`${JSON.stringify({ url: server.url, token: server.token, redisUrl: server.redisUrl })}\n`);
