import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chaoticFetch } from "../../support/chaotic-fetch.ts";
import { scenario } from "../../support/lock-core/program.ts";
import { netLog, runScenario } from "../../support/lock-core/run.ts";

/**
 * Several clients (each its own @upstash/redis client, as separate isolates would be) run random
 * programs against one or two locks over the real local server and real Redis, while every HTTP
 * request and response is delayed at random and some responses are lost after Redis applied the
 * request (so @upstash/redis retries the same body). Leases are short and lapse. After each run
 * the invariants are checked (test/support/lock-core/: the programs, the run, the checks).
 */

describe("lock core under random programs, delays, lost responses and lapsing leases", () => {
  it("keeps mutual exclusion, fence order and liveness; every call settles", async () => {
    const totals = { runs: 0, operations: 0, requests: 0, dropped: 0 };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const real = globalThis.fetch;
    const started = performance.now();
    try {
      await fc.assert(
        fc.asyncProperty(scenario, async ({ programs, net }) => {
          globalThis.fetch = chaoticFetch(real, net, totals, (line) => netLog?.(line));
          try {
            const { violations, operations } = await runScenario(programs, net);
            totals.runs++;
            totals.operations += operations;
            if (violations.length) throw new Error(violations.join("\n"));
          } finally {
            globalThis.fetch = real;
          }
        }),
        {
          numRuns: Number(process.env.FC_RUNS ?? 15),
          seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined,
          endOnFailure: process.env.FC_SHRINK ? false : true,
        },
      );
    } finally {
      globalThis.fetch = real;
      process.off("unhandledRejection", onUnhandled);
      console.log(`lock core property: ${totals.runs} runs, ${totals.operations} calls, ${totals.requests} HTTP requests (${totals.dropped} responses lost), ${Math.round(performance.now() - started)} ms`);
    }
    expect(unhandled).toEqual([]);
  }, 170_000);
});
