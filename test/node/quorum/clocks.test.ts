// Quorum mode with nodes whose clocks are wrong (the clock shim): fences keep rising across holders
// even after the node that minted the highest fence is gone.
import { describe, expect, it, vi, type TestContext } from "vitest";
import { clockShim, NO_COMPILER, nodesPerTest, type QuorumNodes } from "../../support/quorum/nodes.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();
const HOUR_MS = 3_600_000;

/** Nodes with the given clock offsets (checked), or the test skipped where the shim cannot be built. */
async function shiftedNodes(ctx: TestContext, count: number, clocks: Record<number, number>): Promise<QuorumNodes> {
  const shim = await clockShim();
  if (!shim) ctx.skip(NO_COMPILER);
  const rig = await nodes(count, { clocks, shim });
  for (const [i, offsetMs] of Object.entries(clocks)) await rig.checkClock(Number(i), offsetMs);
  return rig;
}

/** Waits until every node in `which` remembers `fence` as its last (the write-back runs on after acquire). */
async function carried(rig: QuorumNodes, which: number[], prefix: string, name: string, fence: number) {
  await until(async () => (await Promise.all(which.map((i) => rig.lastFence(i, prefix, name)))).every((f) => f >= fence), 5_000);
}

const others = (count: number, skip: number[]) => Array.from({ length: count }, (_, i) => i).filter((i) => !skip.includes(i));

/** Runs `fn` as a client whose wall clock (Date.now(), which proposes fences) reads `aheadMs` ahead. */
async function asClientAhead<T>(aheadMs: number, fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now;
  Date.now = () => realNow() + aheadMs;
  try {
    return await fn();
  } finally {
    Date.now = realNow;
  }
}

describe.each([3, 5])("on %i nodes", (count) => {
  // A minority: node 0 (the one with the wrong clock) and, on 5 nodes, one more.
  const lost = count === 3 ? [0] : [0, 1];

  describe.each([
    ["10 s", 10_000, "stopped"],
    ["10 s", 10_000, "killed"],
    ["50 minutes", 50 * 60_000, "stopped"], // more than an hour ahead, its clock would count
  ] as const)("a node %s ahead grants the lock, then is %s", (_, aheadMs, loss) => {
    it("the next holder's fence is higher, and no fence runs ahead of the client's clock", async (ctx) => {
      const rig = await shiftedNodes(ctx, count, { 0: aheadMs });
      const prefix = uniquePrefix("clock-ahead");
      const locks = rig.locks(prefix);
      const first = await locks.acquire("payout");
      // The majority may answer first: node 0's grant, or the write-back to it, lands soon after.
      await vi.waitFor(async () => expect(await rig.lastFence(0, prefix, "payout")).toBe(first.fence), { timeout: 5_000 });
      // The fast node's clock did not push the fence ahead (a fenced store refuses fences far ahead).
      expect(first.fence).toBeLessThanOrEqual((Date.now() + 1_000) * 1000);
      expect(await first.release()).toBe("released");
      for (const i of lost) await (loss === "stopped" ? rig.stop(i) : rig.kill(i));
      const next = await locks.acquire("payout");
      expect(next.fence).toBeGreaterThan(first.fence);
      await next.release();
    });
  });

  it("a node 10 minutes behind neither holds acquire back nor lets a fence go back", async (ctx) => {
    const rig = await shiftedNodes(ctx, count, { 0: -600_000 });
    const prefix = uniquePrefix("clock-behind");
    const locks = rig.locks(prefix);
    const first = await locks.acquire("payout");
    await vi.waitFor(async () => expect(await rig.lastFence(0, prefix, "payout")).toBe(first.fence), { timeout: 5_000 });
    expect(await first.release()).toBe("released");
    // The healthy nodes go: the slow one, with its own memory, is in every majority left.
    for (const i of others(count, [0]).slice(0, lost.length)) rig.stop(i);
    const next = await locks.acquire("payout");
    expect(next.fence).toBeGreaterThan(first.fence);
    await next.release();
    // It keeps that fence until its own clock passes it (ten minutes from now, by its clock).
    expect(await rig.fencePttl(0, prefix, "payout")).toBeGreaterThan(600_000);
  });
});

describe("a client 1 hour ahead takes the lock, then a node is stopped", () => {
  // The usual fence key lifetime (lease + 60 s) would be long gone when the nodes' clocks reach that fence.
  it("the other nodes keep its fence until their clocks pass it, so the next fence is higher", async (ctx) => {
    const rig = await shiftedNodes(ctx, 3, { 0: 0, 1: 0, 2: 0 });
    const prefix = uniquePrefix("client-hour");
    const locks = rig.locks(prefix);
    const first = await asClientAhead(HOUR_MS, () => locks.acquire("payout"));
    expect(first.fence).toBeGreaterThan((Date.now() + HOUR_MS - 60_000) * 1000);
    expect(await first.release()).toBe("released");
    await carried(rig, [1, 2], prefix, "payout", first.fence);
    rig.stop(0);

    // Kept at least until their clocks pass the fence: about an hour, not a minute.
    const aheadMs = first.fence / 1000 - Date.now();
    for (const i of [1, 2]) expect(await rig.fencePttl(i, prefix, "payout")).toBeGreaterThan(aheadMs - 5_000);

    // Half an hour passes on the others: a one-minute key would have expired 29 minutes ago.
    for (const i of [1, 2]) rig.setClock(i, HOUR_MS / 2);
    for (const i of [1, 2]) await rig.checkClock(i, HOUR_MS / 2);
    for (const i of [1, 2]) expect(await rig.lastFence(i, prefix, "payout")).toBe(first.fence);
    const next = await locks.acquire("payout"); // from a client with a true clock
    expect(next.fence).toBeGreaterThan(first.fence);
    await next.release();
  });
});

// A client whose clock is behind an earlier holder's proposes a lower fence: the nodes' last fences
// must outlast that gap, and a node that has forgotten one must still mint above it.
describe("a client 2 minutes ahead takes the lock, and a client with a true clock comes after", () => {
  it.for([
    ["10 minutes pass on the nodes", 600_000],
    ["2 hours pass on the nodes, past when they forget the fence", 2 * HOUR_MS],
  ] as const)("the next fence is higher when %s", async ([, passMs], ctx) => {
    const rig = await shiftedNodes(ctx, 3, { 0: 0, 1: 0, 2: 0 });
    const prefix = uniquePrefix("client-behind");
    const locks = rig.locks(prefix);
    const first = await asClientAhead(120_000, () => locks.acquire("payout"));
    expect(await first.release()).toBe("released");
    await carried(rig, [0, 1, 2], prefix, "payout", first.fence);
    for (const i of [0, 1, 2]) rig.setClock(i, passMs);
    for (const i of [0, 1, 2]) await rig.checkClock(i, passMs);
    const next = await locks.acquire("payout");
    expect(next.fence).toBeGreaterThan(first.fence);
    await next.release();
  });
});
