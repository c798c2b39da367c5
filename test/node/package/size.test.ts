import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { measureAll } from "../../../scripts/size.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

describe("bundle size (npm run size)", () => {
  it("keeps the example worker and the core library within their gzip budgets", async () => {
    const rows = await measureAll();
    for (const row of rows.filter((r) => r.budgetBytes !== undefined)) {
      expect.soft(row.gzipBytes, row.name).toBeLessThanOrEqual(row.budgetBytes ?? 0);
    }
    // The core never pulls in its peers: a bundle with them is much bigger.
    const core = rows.find((r) => r.name.startsWith("core:"));
    const withZod = rows.find((r) => r.name.startsWith("core with zod"));
    expect(core && withZod && withZod.gzipBytes - core.gzipBytes).toBeGreaterThan(3_000);
  });

  // package.json's "sideEffects": false lets a bundler drop the option schemas an app never runs.
  it("carries neither zod nor the lock core into an app that takes only fencelock/sql and an error class from fencelock", async () => {
    const result = await build({
      stdin: { contents: 'export { StaleFenceError } from "fencelock"; export { fencedWrite } from "fencelock/sql";', resolveDir: root, loader: "ts" },
      alias: { "fencelock/sql": "./src/sql.ts", fencelock: "./src/index.ts" },
      bundle: true, minify: true, write: false, format: "esm", platform: "neutral", conditions: ["workerd", "worker", "browser"],
      mainFields: ["module", "main"], external: ["@upstash/redis", "hono"], logLevel: "silent",
    });
    const code = result.outputFiles[0]?.text ?? "";
    expect(code).not.toMatch(/zod/);
    expect(code.length).toBeLessThan(8_000);
  });
});
