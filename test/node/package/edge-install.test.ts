// An edge app's install brings no TCP Redis client: ioredis is an optional peer that only the
// local server (fencelock/local, `fencelock dev`) uses, and the CLI says how to get it.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

describe("an edge app's install", () => {
  it("brings no runtime dependency: ioredis is an optional peer", () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.peerDependencies.ioredis).toBeDefined();
    expect(pkg.peerDependenciesMeta.ioredis?.optional).toBe(true);
  });

  it("imports ioredis only from the local server and the ioredis adapter (fencelock/ioredis)", () => {
    const files = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const importers = files.filter((f) => /from "ioredis"/.test(readFileSync(join(root, "src", f), "utf8")));
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((f) => !f.startsWith("local/") && !/^(tcp\/)?ioredis[.-]/.test(f))).toEqual([]);
  });

  it.each(["index.ts", "hono.ts", "http.ts", "sql.ts", "worker.ts"])("reaches no TCP client or adapter from src/%s", (entry) => {
    const { files, packages } = reachedFrom(entry);
    expect(files.filter((f) => f.startsWith("tcp/") || f.startsWith("local/"))).toEqual([]);
    expect(packages.filter((p) => /^(ioredis|redis|@redis\/)/.test(p))).toEqual([]);
  });
});

/** The src/ files an entry point imports, directly or through others (type imports too), and the packages they name. */
function reachedFrom(entry: string): { files: string[]; packages: string[] } {
  const files = new Set([entry]);
  const packages = new Set<string>();
  for (const file of files) {
    const text = readFileSync(join(root, "src", file), "utf8");
    // Statements at the start of a line, so an @example's imports in a doc comment do not count.
    for (const [, stated, dynamic] of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/gm)) {
      const spec = stated ?? dynamic ?? "";
      if (spec.startsWith(".")) files.add(join(dirname(file), spec));
      else packages.add(spec);
    }
  }
  return { files: [...files], packages: [...packages] };
}

describe("fencelock dev without ioredis installed", () => {
  const scratch = mkdtempSync(join(tmpdir(), "fencelock-no-ioredis-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("says what to install, and exits 1", async () => {
    for (const dir of ["bin", "src"]) cpSync(join(root, dir), join(scratch, dir), { recursive: true });
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    mkdirSync(join(scratch, "node_modules"));
    symlinkSync(join(root, "node_modules/zod"), join(scratch, "node_modules/zod"), "dir");
    const failed = await promisify(execFile)(process.execPath, [join(scratch, "bin/fencelock.js"), "dev"]).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toMatch(/ioredis, which is not installed: npm i -D ioredis/);
  });
});
