// The quorum bench (npm run bench -- --only quorum) tells one-round acquires from write-backs by
// the scripts an acquire sends, and checks issue 25's targets against the round trips it measured.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { installScriptCounter, callsTo, ScriptCalls, scriptScope } from "../../../bench/harness/script-calls.ts";
import { summarize } from "../../../bench/harness/stats.ts";
import { quorumTargets } from "../../../bench/report/quorum.ts";
import type { QuorumResults } from "../../../bench/scenarios/quorum.ts";
import { sha1Hex } from "../../../src/core/sha1.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";

describe("script calls counted at the transport", () => {
  const original = globalThis.fetch;
  let restore: () => void = () => undefined;
  beforeEach(() => {
    globalThis.fetch = async () => new Response("{}");
    restore = installScriptCounter();
  });
  afterEach(() => {
    restore();
    globalThis.fetch = original;
  });

  it("names adopt.lua by its SHA-1, in a single command and in a pipeline, per scope and per node", async () => {
    const adopt = sha1Hex(scripts.adopt.text);
    const acquire = sha1Hex(scripts.acquire.text);
    const url = "http://127.0.0.1:1/";
    const before = callsTo(url).count("adopt");
    const mine = new ScriptCalls();
    await scriptScope(mine, async () => {
      await fetch(url, { method: "POST", body: JSON.stringify(["evalsha", adopt, "2", "k1", "k2", "a"]) });
      await fetch(`${url}pipeline`, { method: "POST", body: JSON.stringify([["evalsha", acquire, "0"], ["evalsha", adopt, "0"], ["get", "x"]]) });
      await fetch(url, { method: "POST", body: JSON.stringify(["evalsha", "0".repeat(40), "0"]) });
    });
    expect(mine.byScript).toEqual({ adopt: 2, acquire: 1, other: 1 });
    expect(callsTo(url).count("adopt") - before).toBe(2);
  });
});

describe("issue 25's targets", () => {
  const group = (aheadWriteBacks: number[]) => ({
    nodes: 3,
    majority: 2,
    libraries: [],
    roundTrips: {
      probe: "",
      perNodeMs: [summarize([1]), summarize([2]), summarize([3])],
      majorityNodeP50: 2,
      fanOutMajorityMs: summarize([2.5]),
      fanOutAllMs: summarize([3.5]),
    },
    sequential: [
      { id: "fencelock-quorum-3", acquireMs: summarize([2.9, 3.1]), oneRoundAcquireMs: summarize([2.9, 3.1]), writeBackAcquireMs: summarize([]) },
      { id: "fencelock-quorum-3-ahead", acquireMs: summarize(aheadWriteBacks), oneRoundAcquireMs: summarize([]), writeBackAcquireMs: summarize(aheadWriteBacks) },
    ],
    counted: [], concurrent: [], contention: [], anomalies: [],
  });

  it("compares the one-round p50 with the majority-th node's round trip + 1 ms, and reports an untimed write-back as not measured", () => {
    const results = { groups: [group([])] } as unknown as QuorumResults;
    const [one, two] = quorumTargets(results);
    // p50 3.0 ms against 2 + 1 ms.
    expect(one?.met).toBe(true);
    expect(two?.met).toBeNull();
  });

  it("misses the write-back target above two round trips + 1 ms", () => {
    const results = { groups: [group([5.5, 5.5])] } as unknown as QuorumResults;
    expect(quorumTargets(results)[1]?.met).toBe(false);
  });
});
