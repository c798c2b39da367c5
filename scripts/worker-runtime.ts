// Bundles a worker and runs it in workerd through Miniflare: for npm run demo and the workerd tests.
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

/** Bundles a worker entry the way wrangler resolves packages for workerd, into one ES module. */
export async function bundleWorker(entry: string | URL): Promise<string> {
  const result = await build({
    entryPoints: [entry instanceof URL ? fileURLToPath(entry) : entry],
    bundle: true,
    write: false,
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*"],
    format: "esm",
    target: "es2022",
    logLevel: "silent",
  });
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error(`esbuild produced no output for ${String(entry)}`);
  return output.text;
}

export interface WorkerOptions {
  d1Databases?: string[];
  bindings?: Record<string, string | number | boolean>;
  compatibilityDate?: string;
  compatibilityFlags?: string[];
}

export interface StartedWorker {
  mf: Miniflare;
  /** Sends a request to the worker; `path` is resolved against http://worker.test. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** POSTs `body` as JSON and returns the parsed JSON answer, whatever its status. */
  rpc<T>(body: unknown, path?: string): Promise<T>;
  dispose(): Promise<void>;
}

/** Bundles `entry` and runs it in workerd; call dispose() in afterAll. */
export async function startWorker(entry: string | URL, options: WorkerOptions = {}): Promise<StartedWorker> {
  const script = await bundleWorker(entry);
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: options.compatibilityDate ?? "2026-07-30",
    compatibilityFlags: options.compatibilityFlags ?? [],
    d1Databases: options.d1Databases ?? [],
    bindings: options.bindings ?? {},
  });
  await mf.ready;
  const fetch = async (path: string, init?: RequestInit): Promise<Response> => {
    // Miniflare answers with undici's Response; re-wrapping gives callers the global type.
    const response = await mf.dispatchFetch(new URL(path, "http://worker.test").href, init as never);
    return new Response(await response.arrayBuffer(), { status: response.status, headers: [...response.headers] });
  };
  return {
    mf,
    fetch,
    async rpc<T>(body: unknown, path = "/") {
      const response = await fetch(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
      return (await response.json()) as T;
    },
    dispose: () => mf.dispose(),
  };
}
