// Quorum mode with a minority of nodes paused (SIGSTOP) for longer than the per-node timeout: the
// lock set decides on the majority that answers and never waits for the silent ones.
import { describe, expect, it } from "vitest";
import { sleep } from "../../../src/waiting/backoff.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

/** Long enough that waiting for a paused node would show; the pause outlasts it. */
const TIMEOUT_MS = 2_000;

describe.each([3, 5])("on %i nodes with a minority paused past timeoutMs", (count) => {
  const paused = Array.from({ length: Math.floor((count - 1) / 2) }, (_, k) => count - 1 - k);

  it("acquires without waiting for the paused nodes, and a second contender finds it busy", async () => {
    const rig = await nodes(count);
    const prefix = uniquePrefix("paused");
    const locks = rig.locks(prefix, { timeoutMs: TIMEOUT_MS });
    const other = rig.locks(prefix, { timeoutMs: TIMEOUT_MS });
    await (await locks.acquire("warm")).release(); // scripts loaded on every node
    for (const i of paused) rig.stop(i);
    const pausedAt = performance.now();

    const started = performance.now();
    const lease = await locks.acquire("invoice");
    // Decided by the majority: far sooner than a paused node's timeout (generous on a busy machine).
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(await other.tryAcquire("invoice")).toBeNull();
    await lease.heartbeat();
    expect(lease.remainingMs()).toBeGreaterThan(5_000);

    // The pause now outlasts the per-node timeout; the lease and the busy answer stay as they were.
    await sleep(Math.max(0, TIMEOUT_MS + 200 - (performance.now() - pausedAt)));
    expect(await other.tryAcquire("invoice")).toBeNull();
    expect(await lease.release()).toBe("released");
    const next = await other.acquire("invoice");
    expect(next.fence).toBeGreaterThan(lease.fence);

    // Resumed, the paused nodes run what they were sent meanwhile; the lock stays exclusive.
    for (const i of paused) rig.cont(i);
    expect(await locks.tryAcquire("invoice")).toBeNull();
    expect(await next.release()).toBe("released");
    const last = await locks.acquire("invoice", { waitMs: 15_000 });
    expect(last.fence).toBeGreaterThan(next.fence);
    await last.release();
  });

  it("inspect answers from the majority once the paused nodes time out, and marks them null", async () => {
    const rig = await nodes(count);
    const locks = rig.locks(uniquePrefix("paused-inspect"), { timeoutMs: 1_000 });
    const lease = await locks.acquire("invoice");
    for (const i of paused) rig.stop(i);
    const state = await locks.inspect("invoice");
    expect(state).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(paused.every((i) => state.nodes?.[i] === null)).toBe(true);
    expect(state.nodes?.filter((n) => n?.held && n.fence === lease.fence)).toHaveLength(count - paused.length);
    expect(await lease.release()).toBe("released");
  });
});
