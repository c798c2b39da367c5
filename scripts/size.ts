// npm run size: minified + gzipped sizes of the example worker and of the core library.
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));

export interface Measured {
  name: string;
  bytes: number;
  gzipBytes: number;
  budgetBytes: number | undefined;
}

async function measure(name: string, entry: string, external: string[], budgetKiB?: number): Promise<Measured> {
  const result = await build({
    entryPoints: [`${root}${entry}`],
    bundle: true,
    minify: true,
    write: false,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", ...external],
    logLevel: "silent",
  });
  const code = result.outputFiles[0]?.contents ?? new Uint8Array();
  return { name, bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, budgetBytes: budgetKiB && budgetKiB * 1024 };
}

/** Every bundle we watch; the budgets are the ones the project committed to. */
export function measureAll(): Promise<Measured[]> {
  return Promise.all([
    measure("example worker (worker/index.ts, everything bundled)", "worker/index.ts", [], 47.75),
    measure("core: fencelock (peers @upstash/redis, zod, hono external)", "src/index.ts", ["@upstash/redis", "zod", "hono"], 13.75),
    measure("core with zod/mini bundled in", "src/index.ts", ["@upstash/redis", "hono"]),
    measure("fencelock/hono", "src/hono.ts", ["@upstash/redis", "zod", "hono"]),
    measure("fencelock/http", "src/http.ts", ["@upstash/redis", "zod", "hono"]),
    measure("fencelock/sql", "src/sql.ts", ["@upstash/redis", "zod", "hono"]),
    measure("fencelock/worker", "src/worker.ts", ["@upstash/redis", "zod", "hono"]),
  ]);
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = await measureAll();
  console.log("| bundle | minified | min+gzip | budget (gzip) |\n|---|---:|---:|---:|");
  for (const r of rows) {
    const budget = r.budgetBytes === undefined ? "" : `${kib(r.budgetBytes)} ${r.gzipBytes <= r.budgetBytes ? "ok" : "OVER"}`;
    console.log(`| ${r.name} | ${kib(r.bytes)} | ${kib(r.gzipBytes)} | ${budget} |`);
  }
  process.exit(rows.some((r) => r.budgetBytes !== undefined && r.gzipBytes > r.budgetBytes) ? 1 : 0);
}
