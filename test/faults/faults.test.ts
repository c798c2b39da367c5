/**
 * Redis-level faults, beside the network chaos test (test/node/chaos/chaos.test.ts). Each scenario runs
 * the real local server (src/local) and the real @upstash/redis client against real redis-server
 * processes on 127.0.0.1, behind a proxy that stands for the fixed Redis address a failover
 * switches, while clients take locks through the public API and write under their fences to a
 * fenced store on a redis-server that no fault touches. Nemeses: failover losing the last writes
 * (and lost holders writing late), SIGSTOP past the lease, restart without persistence, FLUSHALL,
 * split brain, a failover to a clock ahead or behind, a clock stepped back on a live primary, and
 * the chain (A's clock 10 s fast fails over to B, B to C). Clocks are shifted by an LD_PRELOAD
 * shim built with the system C compiler (those scenarios skip without one).
 *
 * The stated condition: no fence repeats or regresses when the failover gap exceeds the new
 * primary's clock lag behind the old one plus τ (1 s). Inside it, every scenario must show 0
 * fences repeated or regressed and 0 stale writes accepted; outside it, only what still holds is
 * asserted and the rest is reported. Overlapping holds are information: under lost keys mutual
 * exclusion is the fence's to keep.
 *
 * This file runs the short form, part of `npm test` (about 40 s, mostly waiting). `npm run faults`
 * runs every scenario in the full form (100 names, 8 clients) and prints the report table;
 * `npm run faults -- --short chain` runs one scenario in the short form.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SHORT } from "../support/faults/forms.ts";
import { report, runScenarios, SCENARIOS } from "../support/faults/scenarios.ts";
import { rowProblems, type Row } from "../support/faults/row.ts";

const rows: Row[] = [];

describe.sequential("Redis-level faults (short form)", () => {
  afterAll(() => {
    if (rows.length) console.log(`faults, short form:\n${report(rows).table}`);
  });

  for (const scenario of SCENARIOS.filter((s) => s.short)) {
    it(scenario.id, async (context) => {
      const got = await runScenarios(SHORT, [scenario], () => {});
      rows.push(...got);
      const skipped = got.find((row) => row.skipped);
      if (skipped) context.skip(skipped.skipped);
      expect(got.flatMap(rowProblems)).toEqual([]);
    }, 120_000);
  }
});
