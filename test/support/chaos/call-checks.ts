import { LockUnavailableError } from "../../../src/index.ts";
import type { History } from "./history.ts";

type ErrorKind = abstract new (...args: never[]) => Error;

export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.slice(0, 120)}` : String(error);
}

/** Watches each library call: it settles within its bound and fails only in documented ways. */
export class CallChecks {
  /** Calls made, for the run's summary. */
  count = 0;
  readonly #timeoutMs: number;
  readonly #history: History;

  constructor(timeoutMs: number, history: History) {
    this.#timeoutMs = timeoutMs;
    this.#history = history;
  }

  /** The most a call may take: its wait, a few scripts each given up after timeoutMs, and the network's delays. */
  boundMs(waitMs = 0): number {
    return waitMs + 4 * this.#timeoutMs + 1_500;
  }

  /** Runs `call`, noting a hang (still unsettled at the bound) as soon as it happens, and a slow settle. */
  async settle<T>(what: string, boundMs: number, call: () => Promise<T>): Promise<T> {
    this.count++;
    const started = performance.now();
    const timer = setTimeout(() => this.#history.violation(`hang: ${what} unsettled after ${boundMs} ms`), boundMs);
    try {
      return await call();
    } finally {
      clearTimeout(timer);
      const tookMs = performance.now() - started;
      if (tookMs > boundMs) this.#history.violation(`slow: ${what} took ${Math.round(tookMs)} ms`);
    }
  }

  /** Any call may find Redis unavailable; beyond that, only the `kinds` its documentation names. */
  expectError(what: string, error: unknown, ...kinds: ErrorKind[]): void {
    if (error instanceof LockUnavailableError || kinds.some((kind) => error instanceof kind)) return;
    this.#history.violation(`${what} threw unexpectedly: ${describeError(error)}`);
  }
}
