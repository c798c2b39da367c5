export const now = (): number => performance.now();

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** An AbortSignal that fires at `deadline` (a performance.now() time); dispose to clear its timer. */
export function abortAt(deadline: number): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("benchmark window over")), Math.max(0, deadline - now()));
  return { signal: controller.signal, dispose: () => clearTimeout(timer) };
}

/** Logs a progress line to stderr, keeping stdout for the report. */
export function progress(message: string): void {
  process.stderr.write(`[bench ${(now() / 1000).toFixed(1)}s] ${message}\n`);
}

/** A full GC when node runs with --expose-gc (npm run bench does); otherwise nothing. */
export function collectGarbage(): void {
  const gc: unknown = Reflect.get(globalThis, "gc");
  if (typeof gc === "function") gc();
}
