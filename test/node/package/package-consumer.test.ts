// The package as a user installs it: what package.json promises about its peers, and the emitted
// .d.ts files as a consumer's tsc reads them.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  peerDependencies: Record<string, string>;
  scripts: Record<string, string>;
};

/** The lowest version a caret/tilde/plain range like "^1.34.0" admits, as [major, minor, patch]. */
function lowerBound(range: string): [number, number, number] {
  const match = /^[\^~]?(\d+)\.(\d+)\.(\d+)$/.exec(range.trim());
  if (!match) throw new Error(`unexpected range ${range}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

const atLeast = (v: number[], w: number[]) => {
  for (let i = 0; i < 3; i++) if (v[i] !== w[i]) return (v[i] ?? 0) > (w[i] ?? 0);
  return true;
};

describe("peer dependency ranges", () => {
  // Checked by installing the packed tarball next to each version:
  // - 1.34.0-1.34.4 have no Redis#subscribe(): wake: "push" silently polls (a handoff after a
  //   release took 40-55 ms with 1.34.0 against 7-9 ms with 1.34.5 and 1.39.0, no error or warning);
  // - before 1.35.1 `signal` takes an AbortSignal only: the README's
  //   `new Redis({ url, token, signal: () => AbortSignal.timeout(3_000) })` makes every request
  //   fail (LockUnavailableError "no answer within 3000ms" with 1.34.5, then 5 retries keep the
  //   process alive), and it is a type error in TypeScript;
  // - before 1.36.1 subscribe() splits each read of the event stream on "\n" and drops a line's
  //   remainder: workerd hands a handover to the reader in two reads, so in a Worker every push
  //   wait silently polled (workerd-guard's push test: 3 attempts with 1.35.1-1.36.0, 2 from 1.36.1;
  //   wake/push-stream.test.ts reproduces it in Node). Before 1.35.5 it also throws on a payload
  //   that is not JSON (an "error" event), which test/node/local/subscribe.test.ts runs into.
  it("@upstash/redis: the lowest version the range admits has subscribe() that reads split events, and signal as a function", () => {
    const range = pkg.peerDependencies["@upstash/redis"] ?? "";
    expect(lowerBound(range), `peerDependencies["@upstash/redis"] is ${range}`).toSatisfy(
      (v: number[]) => atLeast(v, [1, 36, 1]),
    );
  });
});

describe("a git install (npm i github:OWNER/fencelock)", () => {
  // npm runs only `prepare` for a git dependency; built in `prepack`, the install had no dist/ and
  // `import "fencelock"` failed (tried with npm 11: a git+file install of a clone).
  it("builds dist/ in the prepare script", () => {
    expect(pkg.scripts.prepare).toBe("npm run build");
    expect(pkg.scripts.prepack).toBeUndefined();
  });
});

describe("emitted declarations in a consumer's tsc", () => {
  const scratch = mkdtempSync(join(tmpdir(), "fencelock-consumer-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  // lease.d.ts says `class Lease implements AsyncDisposable`: without the lib it names, a project
  // that type-checks its libraries (skipLibCheck: false) could not import "fencelock" at all.
  it("type-check with lib es2023 + dom, no @types/node, skipLibCheck false", async () => {
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const app = join(scratch, "app");
    const dist = join(app, "node_modules/fencelock/dist");
    mkdirSync(dist, { recursive: true });
    const run = promisify(execFile);
    await run(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist]);
    writeFileSync(join(app, "node_modules/fencelock/package.json"), readFileSync(join(root, "package.json")));
    symlinkSync(join(root, "node_modules/zod"), join(app, "node_modules/zod"), "dir");
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    writeFileSync(join(app, "app.ts"), [
      `import { createLocks, type RedisClient } from "fencelock";`,
      `declare const redis: RedisClient;`,
      `export const fence: number = (await createLocks({ redis }).acquire("job")).fence;`,
    ].join("\n"));
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, target: "es2022", lib: ["es2023", "dom"], module: "esnext", moduleResolution: "bundler",
        types: [], skipLibCheck: false, noEmit: true,
      },
      files: ["app.ts"],
    }));
    const result = await run(process.execPath, [tsc, "-p", app, "--pretty", "false"]).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(result.split("\n").filter((line) => line.includes("fencelock/dist"))).toEqual([]);
  });
});
