// Quorum mode with a majority of nodes down: QuorumUnavailableError that says who answered, never
// "busy" and never a timeout, and nothing left held on the nodes that did answer.
import { describe, expect, it } from "vitest";
import { LockTimeoutError, LockUnavailableError, QuorumUnavailableError } from "../../../src/index.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

/** The QuorumUnavailableError `call` rejects with (it must not resolve, nor reject with anything else). */
async function unavailable(call: Promise<unknown>): Promise<QuorumUnavailableError> {
  const error = await call.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(QuorumUnavailableError);
  expect(error).not.toBeInstanceOf(LockTimeoutError);
  return error as QuorumUnavailableError;
}

const majorityOf = (count: number) => Math.floor(count / 2) + 1;

describe.each([3, 5])("on %i nodes with a majority down", (count) => {
  const live = count - majorityOf(count);
  const down = Array.from({ length: majorityOf(count) }, (_, k) => live + k);
  const liveNodes = Array.from({ length: live }, (_, i) => i);
  /** Whether one of the error's failure lines is about node i. */
  const blames = (error: QuorumUnavailableError, i: number) => error.failures.some((f) => f.startsWith(`redis[${i}]:`) || f.startsWith(`redis[${i}] `));

  const start = async (label: string) => {
    const rig = await nodes(count);
    const prefix = uniquePrefix(label);
    return { rig, prefix, locks: rig.locks(prefix, { timeoutMs: 1_000 }) };
  };

  const expectCounts = (error: QuorumUnavailableError) => {
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).toMatchObject({ code: "QUORUM_UNAVAILABLE", nodes: count });
    // One line per silent node, each naming it.
    for (const i of down) expect(blames(error, i)).toBe(true);
    expect(error.message).toContain(`of ${count} Redis nodes answered`);
  };

  // Stopped nodes answer after the live ones, so the counts are exact: every live node answered and granted.
  it("tryAcquire and acquire throw QuorumUnavailableError with exact counts when the majority is stopped", async () => {
    const { rig, locks } = await start("stopped");
    for (const i of down) rig.stop(i);
    // At once, on two names, so the stopped nodes' timeouts run together.
    const errors = await Promise.all([unavailable(locks.tryAcquire("ledger")), unavailable(locks.acquire("journal", { waitMs: 5_000 }))]);
    for (const error of errors) {
      expectCounts(error);
      expect(error).toMatchObject({ answered: live, granted: live });
      expect(error.failures).toHaveLength(down.length);
    }
  });

  it("tryAcquire and acquire throw QuorumUnavailableError when the majority is killed, and blame only dead nodes", async () => {
    const { rig, locks } = await start("killed");
    for (const i of down) await rig.kill(i);
    // Repeated: which answers arrive first varies, and no order may blame a live node.
    for (let round = 0; round < 5; round++) {
      for (const call of [() => locks.tryAcquire(`ledger:${round}`), () => locks.acquire(`journal:${round}`, { waitMs: 5_000 })]) {
        const error = await unavailable(call());
        expectCounts(error);
        expect(liveNodes.filter((i) => blames(error, i))).toEqual([]);
        expect(error).toMatchObject({ answered: live, granted: live });
      }
    }
  });

  it("gives back what the live nodes granted, so the lock is free once the nodes return", async () => {
    const { rig, prefix, locks } = await start("given-back");
    const targets = down.map((i) => rig.redis(i));
    for (const i of down) rig.cut(i);
    await unavailable(locks.tryAcquire("ledger"));
    const lockKey = lockKeys(prefix, "ledger").lock;
    const held = async () => (await Promise.all(liveNodes.map((i) => rig.redis(i).admin.exists(lockKey)))).some(Boolean);
    await until(async () => !(await held()), 5_000);
    for (const [k, i] of down.entries()) await rig.heal(i, targets[k]!);
    const lease = await locks.tryAcquire("ledger");
    expect(lease).not.toBeNull();
    await lease?.release();
  });

  it("heartbeat and release of a held lease throw QuorumUnavailableError, and work again once healed", async () => {
    const { rig, locks } = await start("lease-ops");
    const lease = await locks.acquire("ledger");
    const targets = down.map((i) => rig.redis(i));
    for (const i of down) rig.cut(i);
    expectCounts(await unavailable(lease.heartbeat()));
    expectCounts(await unavailable(lease.release()));
    // The nodes kept their data: the lease is still held, and a retried release finds it.
    for (const [k, i] of down.entries()) await rig.heal(i, targets[k]!);
    expect(await lease.release()).toBe("released");
    expect((await locks.inspect("ledger")).held).toBe(false);
  });
});
