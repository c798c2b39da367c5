/**
 * scripts/test-lowest-peers.ts installs the lowest peers over node_modules and must put the lock
 * file's versions back however the run ends, or every later `npm test` in that checkout quietly
 * runs against the floors. It runs here in a copy of the project whose npm, tsc and vitest are
 * fakes, so the real node_modules is never touched.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { until } from "../../support/until.ts";

type Versions = Record<string, string>;

const PEERS: Versions = { "@upstash/redis": "^1.36.1", hono: "^4.6.0", zod: "^4.1.0" };
const LOWEST: Versions = { "@upstash/redis": "1.36.1", hono: "4.6.0", zod: "4.1.0" };
/** What package-lock.json (and so `npm ci`) installs. */
const LOCKED: Versions = { "@upstash/redis": "1.39.0", hono: "4.13.19", zod: "4.6.7" };

/** npm that logs its arguments and, for `install`, writes each name@version as installed. */
const FAKE_NPM = `#!/bin/sh
echo "$*" >> npm.log
for spec in "$@"; do
  case "$spec" in -*|install) continue;; esac
  name="\${spec%@*}"; version="\${spec##*@}"
  mkdir -p "node_modules/$name"
  printf '{"name":"%s","version":"%s"}\\n' "$name" "$version" > "node_modules/$name/package.json"
done
`;

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function executable(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  await chmod(path, 0o755);
}

async function writeInstalled(root: string, versions: Versions): Promise<void> {
  for (const [name, version] of Object.entries(versions)) {
    await mkdir(join(root, "node_modules", name), { recursive: true });
    await writeFile(join(root, "node_modules", name, "package.json"), JSON.stringify({ name, version }));
  }
}

async function readInstalled(root: string): Promise<Versions> {
  const read = async (name: string) => JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")).version as string;
  return Object.fromEntries(await Promise.all(Object.keys(PEERS).map(async (name) => [name, await read(name)])));
}

/** A copy of the project with the script, its peers as `installed`, and a fake vitest running `vitestBody`. */
async function fakeProject(vitestBody: string, installed: Versions = LOCKED): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "fencelock-lowest-peers-"));
  roots.push(root);
  await mkdir(join(root, "scripts"));
  await copyFile(new URL("../../../scripts/test-lowest-peers.ts", import.meta.url), join(root, "scripts", "test-lowest-peers.ts"));
  await writeFile(join(root, "package.json"), JSON.stringify({ name: "fake", type: "module", peerDependencies: PEERS }));
  const lockPackages = Object.fromEntries(Object.entries(LOCKED).map(([name, version]) => [`node_modules/${name}`, { version }]));
  await writeFile(join(root, "package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages: { "": {}, ...lockPackages } }));
  await writeInstalled(root, installed);
  await mkdir(join(root, "node_modules", ".bin"));
  await executable(join(root, "node_modules", ".bin", "tsc"), "#!/bin/sh\nexit 0\n");
  await executable(join(root, "node_modules", ".bin", "vitest"), `#!/bin/sh\n${vitestBody}\n`);
  await mkdir(join(root, "fake-bin"));
  await executable(join(root, "fake-bin", "npm"), FAKE_NPM);
  return root;
}

/** Starts the script in a process group of its own, as a terminal runs a command. */
function startScript(root: string) {
  const child = spawn(process.execPath, ["scripts/test-lowest-peers.ts"], {
    cwd: root,
    detached: true,
    stdio: "ignore",
    env: { ...process.env, PATH: `${join(root, "fake-bin")}:${process.env.PATH}` },
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited };
}

const exists = (path: string) => readFile(path).then(() => true, () => false);

describe("scripts/test-lowest-peers.ts", () => {
  // vitest takes each path as a filter, and one that matches nothing is skipped without a word.
  it("names only test files that exist", async () => {
    const script = await readFile(new URL("../../../scripts/test-lowest-peers.ts", import.meta.url), "utf8");
    const files = [...script.matchAll(/"(test\/[^"]+\.test\.ts)"/g)].map((match) => match[1] ?? "");
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const file of files) expect(existsSync(new URL(`../../../${file}`, import.meta.url)), file).toBe(true);
  });

  it("runs the tests with the lowest peers, then puts the lock file's back when they fail", async () => {
    const root = await fakeProject(`node -e 'console.log(JSON.stringify(require("./node_modules/zod/package.json")))' > seen.json; exit 1`);
    const { exited } = startScript(root);
    expect(await exited).not.toBe(0);
    expect(JSON.parse(await readFile(join(root, "seen.json"), "utf8")).version).toBe(LOWEST.zod);
    expect(await readInstalled(root)).toEqual(LOCKED);
  });

  // Ctrl-C reaches the whole foreground process group: vitest, and the script blocked in
  // execFileSync, which Node's default SIGINT action ends before its `finally` runs.
  it("puts the lock file's versions back when the run is interrupted with Ctrl-C", async () => {
    const root = await fakeProject("touch vitest-started\nexec sleep 30");
    const { child, exited } = startScript(root);
    try {
      await until(() => exists(join(root, "vitest-started")), 10_000);
      process.kill(-child.pid!, "SIGINT");
      await exited;
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }
    expect(await readInstalled(root)).toEqual(LOCKED);
  });

  // After an interrupted run node_modules holds the floors: "putting back" what is installed then
  // keeps them there for good, while the README promises the lock file's versions.
  it("puts back the lock file's versions, not whatever node_modules held when it started", async () => {
    const root = await fakeProject("exit 0", LOWEST);
    const { exited } = startScript(root);
    expect(await exited).toBe(0);
    expect(await readInstalled(root)).toEqual(LOCKED);
  });
});
