// Runs the tests that lean on the peers hardest against the lowest version of each that
// package.json allows, since `npm test` only ever meets the lock file's (the newest). A floor set
// too low once cost every push handover in Workers (@upstash/redis before 1.36.1), and only the
// workerd push test could tell. Installs those versions over node_modules and puts the lock
// file's back afterwards. CI runs it after `npm test`: `node scripts/test-lowest-peers.ts`.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name: string) => join(root, "node_modules", ".bin", name);

/** The files that use @upstash/redis's streams, hono's middleware and zod's checks in earnest. */
const FILES = [
  "test/node/wake.test.ts",
  "test/node/workerd-guard.test.ts",
  "test/node/lock-guard.test.ts",
  "test/node/locks.test.ts",
  "test/node/options.test.ts",
  "test/node/local/subscribe.test.ts",
];

function installed(name: string): string {
  return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
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
const locked = peers.map(([name]) => `${name}@${installed(name)}`);
const lowest = peers.map(([name, range]) => `${name}@${floorOf(name, range)}`);
console.log(`lowest peers: ${lowest.join(" ")} (lock file: ${locked.join(" ")})`);
npmInstall(lowest);
try {
  execFileSync(bin("tsc"), ["-p", "tsconfig.json", "--noEmit"], { cwd: root, stdio: "inherit" });
  execFileSync(bin("vitest"), ["run", ...FILES], { cwd: root, stdio: "inherit" });
} finally {
  npmInstall(locked);
}
