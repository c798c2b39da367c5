// The example Worker as Cloudflare would get it: `wrangler deploy --dry-run` bundles it with
// wrangler.toml's settings, offline, and nothing Node-only or TCP-bound ends up in the bundle.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "fencelock-wrangler-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe("the example Worker's deploy", () => {
  // A bundler run: generous, so that a busy machine cannot fail it on time alone.
  it("builds with wrangler deploy --dry-run, offline, into one bundle without Node or TCP code", { timeout: 180_000 }, async () => {
    const { stdout } = await promisify(execFile)(
      join(root, "node_modules/.bin/wrangler"),
      ["deploy", "--dry-run", "--outdir", outdir],
      { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
    expect(stdout).toMatch(/--dry-run: exiting now/);
    expect(stdout).toMatch(/env\.DB \(fencelock-tickets\)/);
    const bundle = readFileSync(join(outdir, "index.js"), "utf8");
    expect(bundle).toContain("/events/:id/buy");
    expect(bundle).not.toMatch(/from "node:|require\("node:/);
    // No TCP client's module (esbuild marks each bundled file): the core only names the adapters in messages.
    expect(bundle).toContain("// node_modules/@upstash/redis/");
    expect(bundle).toContain("// src/core/");
    expect(bundle).not.toMatch(/\/\/ node_modules\/(ioredis|redis|@redis)\/|\/\/ src\/(tcp|local)\//);
  });
});
