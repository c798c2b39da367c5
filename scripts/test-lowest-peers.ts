// Runs the tests that lean on the peers hardest against the lowest version of each that
// package.json allows, since `npm test` only ever meets the lock file's (the newest). A floor set
// too low once cost every push handover in Workers (@upstash/redis before 1.36.1), and only the
// workerd push test could tell. Installs those versions over node_modules and puts the lock
// file's back afterwards, also after a failure or Ctrl-C. CI runs it after `npm test`:
// `npm run test:lowest-peers`.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name: string) => join(root, "node_modules", ".bin", name);

/** The files that use @upstash/redis's streams, hono's middleware, zod's checks (core and local) and the TCP clients in earnest. */
const FILES = [
  "test/node/waiting/push/stream.test.ts",
  "test/node/waiting/push/fallbacks.test.ts",
  "test/node/edge/workerd-guard.test.ts",
  "test/node/edge/lock-guard/options-and-names.test.ts",
  "test/node/edge/lock-guard/response-lifetime.test.ts",
  "test/node/edge/lock-guard/proxied-bodies.test.ts",
  "test/node/lock/lease-lifecycle.test.ts",
  "test/node/lock/reentrancy-and-with-lock.test.ts",
  "test/node/lock/aborted-calls.test.ts",
  "test/node/core/options.test.ts",
  "test/node/local/subscribe.test.ts",
  "test/node/local/cli.test.ts",
  "test/node/tcp/ioredis/standalone.test.ts",
  "test/node/tcp/ioredis/push.test.ts",
  "test/node/tcp/node-redis/standalone.test.ts",
  "test/node/tcp/node-redis/cluster.test.ts",
];

/** The version package-lock.json (and so `npm ci`) installs: what goes back, whatever node_modules held. */
function locked(name: string): string {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
  const version = lock.packages?.[`node_modules/${name}`]?.version;
  if (typeof version !== "string") throw new Error(`package-lock.json has no ${name}: run npm install first`);
  return version;
}

/** "^1.36.1" -> "1.36.1": the ranges here are all caret ranges, whose floor is the version named. */
function floorOf(name: string, range: string): string {
  const floor = /^\^(\d+\.\d+\.\d+)$/.exec(range)?.[1];
  if (!floor) throw new Error(`peer ${name}: expected a caret range such as ^1.2.3, got ${range}`);
  return floor;
}

function npmInstall(specs: string[]): void {
  execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", ...specs], { cwd: root, stdio: "inherit" });
}

const peers = Object.entries(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).peerDependencies as Record<string, string>);
const lockFile = peers.map(([name]) => `${name}@${locked(name)}`);
const lowest = peers.map(([name, range]) => `${name}@${floorOf(name, range)}`);
console.log(`lowest peers: ${lowest.join(" ")} (lock file: ${lockFile.join(" ")})`);
// Ctrl-C reaches the child too: it dies, execFileSync throws, and the finally below still runs,
// where Node's default for SIGINT would end this process before it.
process.on("SIGINT", () => void (process.exitCode = 130));
try {
  npmInstall(lowest);
  execFileSync(bin("tsc"), ["-p", "tsconfig.json", "--noEmit"], { cwd: root, stdio: "inherit" });
  execFileSync(bin("vitest"), ["run", ...FILES], { cwd: root, stdio: "inherit" });
} finally {
  try {
    npmInstall(lockFile);
  } catch (error) {
    console.error(`could not put the lock file's peers back (${lockFile.join(" ")}): run npm ci`);
    throw error;
  }
}
