#!/usr/bin/env node
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";

const USAGE = `Usage: fencelock dev [--port N] [--host H] [--redis-url URL] [--token T] [--allow-admin-commands]
                    [--max-connections N] [--max-streams N] [--headers-timeout-ms MS] [--request-timeout-ms MS]

  dev   Serve the Upstash REST protocol on http://127.0.0.1 for @upstash/redis, backed by
        a private redis-server (or --redis-url), until Ctrl-C / SIGTERM / SIGHUP.

Options:
  --port N                 HTTP port, 1-65535 (default: a free port)
  --host H                 HTTP bind address (default: 127.0.0.1)
  --redis-url URL          use this Redis instead of starting redis-server
  --token T                bearer token clients must send (default: random)
  --allow-admin-commands   run CONFIG, DEBUG, SHUTDOWN, ACL, MIGRATE... (default: refused)
  --max-connections N      open HTTP connections; more get 503 (default: 1024)
  --max-streams N          open /subscribe streams, one Redis connection each; more get 503 (default: 256)
  --headers-timeout-ms MS  close a connection whose request headers take longer (default: 10000)
  --request-timeout-ms MS  close a connection whose whole request takes longer (default: 30000)
  -h, --help               show this help`;

class UsageError extends Error {
  name = "UsageError";
  code = "USAGE";
}

/** A clone runs src/ through Node's type stripping; a published package ships only dist/. */
async function loadLocal() {
  const source = new URL("../src/local/index.ts", import.meta.url);
  const built = new URL("../dist/local/index.js", import.meta.url);
  const useSource = existsSync(source) && !source.pathname.includes("/node_modules/");
  try {
    return await importLocal(useSource ? source : built);
  } catch (error) {
    if (!useSource || error?.code !== "ERR_UNKNOWN_FILE_EXTENSION") throw error;
    // A Node without type stripping runs the build, where there is one (a clone that was built, or linked).
    if (existsSync(built)) return importLocal(built);
    throw new Error(`Node ${process.version} cannot run TypeScript sources: use Node >= 22.6 ` +
      "(npx/npm scripts use the one in node_modules) or run `npm run build` first");
  }
}

async function importLocal(url) {
  try {
    return await import(url.href);
  } catch (error) {
    // An optional peer dependency: an edge app's install does not bring a TCP Redis client.
    if (error?.code === "ERR_MODULE_NOT_FOUND" && /'ioredis'/.test(error.message)) {
      throw new Error("the local server talks to Redis through ioredis, which is not installed: npm i -D ioredis");
    }
    throw error;
  }
}

function parseDevOptions(args) {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "redis-url": { type: "string" },
      token: { type: "string" },
      "allow-admin-commands": { type: "boolean" },
      "max-connections": { type: "string" },
      "max-streams": { type: "string" },
      "headers-timeout-ms": { type: "string" },
      "request-timeout-ms": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const numbers = Object.fromEntries(NUMERIC.map((key) => [key, integerOf(FLAGS[key], values[FLAGS[key].slice(2)])]));
  return { help: values.help, port: portOf(values.port), host: values.host, redisUrl: values["redis-url"],
    token: values.token, allowAdminCommands: values["allow-admin-commands"], ...numbers };
}

/** Digits only: Number() also takes "" (0, a random port), "1e3" and "0x50". */
function portOf(text) {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) {
    throw new UsageError(`--port must be an integer from 1 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

/** Digits only, as for --port; startLocalUpstash checks the range and names the flag. */
function integerOf(flag, text) {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

async function dev(args) {
  const { help, ...options } = parseDevOptions(args);
  if (help) return console.log(USAGE);
  // Listen before starting: a signal during startup still closes the server and its redis-server.
  // SIGHUP too (a closed terminal or SSH session): Node would die of it without stopping redis-server.
  // A second signal cuts the drain short: exit() still runs the listener that kills redis-server.
  // Within a second of the first it is the same Ctrl-C, which npm passes on as the terminal sends it.
  let firstSignalAt;
  const stopRequested = new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
      process.on(signal, () => {
        if (firstSignalAt === undefined) resolve((firstSignalAt = Date.now()));
        else if (Date.now() - firstSignalAt > 1_000) process.exit(1);
      });
    }
  });
  const { startLocalUpstash } = await loadLocal();
  const server = await startLocalUpstash(options);
  console.log(`UPSTASH_REDIS_REST_URL=${server.url}`);
  console.log(`UPSTASH_REDIS_REST_TOKEN=${server.token}`);
  // The private redis-server's password is as much the user's as the token printed above.
  const redis = options.redisUrl === undefined ? server.redisUrl : redact(server.redisUrl);
  console.error(`# fencelock dev: Upstash REST on ${server.url} -> ${redis}; ` +
    "export the two lines above for Redis.fromEnv(); Ctrl-C stops");
  // Nothing restarts a private redis-server that died (killed, out of memory): say so, and stop.
  const died = server.redisExited.then((how) => console.error(`# fencelock dev: its redis-server ${how}; stopping, run it again`));
  if (await Promise.race([stopRequested.then(() => false), died.then(() => true)])) process.exitCode = 1;
  await server.close();
}

/** startLocalUpstash()'s options, by the flags that set them. */
const FLAGS = { redisUrl: "--redis-url", port: "--port", host: "--host", token: "--token",
  allowAdminCommands: "--allow-admin-commands", maxConnections: "--max-connections", maxStreams: "--max-streams",
  headersTimeoutMs: "--headers-timeout-ms", requestTimeoutMs: "--request-timeout-ms" };
const NUMERIC = ["maxConnections", "maxStreams", "headersTimeoutMs", "requestTimeoutMs"];

/** An error in the words of this command: "startLocalUpstash: token: ..." names the flag, "--token: ...". */
function describe(error) {
  const message = error?.message ?? String(error);
  if (error?.code !== "BAD_OPTIONS") return message;
  return message.replace(/^startLocalUpstash: /, "")
    .replace(/(^|; )(\w+):/g, (all, separator, key) => (FLAGS[key] ? `${separator}${FLAGS[key]}:` : all))
    // An option named in a message ("at most requestTimeoutMs"); plain words such as "host" stay.
    .replace(/\b[a-z]+[A-Z]\w*/g, (option) => FLAGS[option] ?? option);
}

function redact(url) {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

async function main([command, ...rest]) {
  if (command === "dev") return dev(rest);
  if (command === "--help" || command === "-h" || command === "help") return console.log(USAGE);
  // Not a request for help: a script running `fencelock` by mistake must not carry on as if it had worked.
  throw new UsageError(command === undefined ? "no command given" : `unknown command: ${command}`);
}

main(process.argv.slice(2)).then(
  // With process.exitCode, 0 unless dev() set it.
  () => process.exit(),
  (error) => {
    // Options startLocalUpstash refuses (a bad --token, an empty --host) are usage errors too.
    const usage = error instanceof UsageError || error?.code === "BAD_OPTIONS" ||
      error?.code?.startsWith?.("ERR_PARSE_ARGS");
    console.error(`fencelock: ${describe(error)}${usage ? `\n\n${USAGE}` : ""}`);
    process.exit(usage ? 2 : 1);
  },
);
