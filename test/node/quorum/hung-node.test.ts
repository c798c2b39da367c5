// A node that stops answering without closing its connections (a paused process, a silent
// partition): requests to it pile up in its client until it answers, and the quorum goes on
// without it, unseen. Past a bound, nothing more is sent to it until one of them ends.
import { afterEach, expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { nodesPerTest, type QuorumNodes } from "../../support/quorum/nodes.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();
afterEach(() => void vi.restoreAllMocks());

/** A lock set over the rig whose node 2 counts the requests sent to it. */
function countingLockSet(rig: QuorumNodes, prefix: string) {
  const hung = rig.clients[2]!;
  const counter = { sent: 0 };
  const counted: RedisClient = {
    evalsha: (sha, keys, args) => (counter.sent++, hung.evalsha(sha, keys, args)),
    eval: (text, keys, args) => (counter.sent++, hung.eval(text, keys, args)),
  };
  const locks = createLocks({ redis: [rig.clients[0]!, rig.clients[1]!, counted], prefix, leaseMs: 30_000, timeoutMs: 1_000 });
  return { locks, counter };
}

/** Enough cycles that over 100 requests to the stopped node 2 are out past timeoutMs. */
async function shutOut(locks: ReturnType<typeof countingLockSet>["locks"]): Promise<void> {
  // Each cycle sends the stopped node an acquire, a give-back and a release; all time out.
  for (let i = 0; i < 60; i++) await (await locks.acquire(`job-${i % 4}`)).release();
  await sleep(1_500); // every request sent so far is past timeoutMs
}

/** Node 2's own view of `name`, once it answers. */
async function heldOnNode2(locks: ReturnType<typeof countingLockSet>["locks"], name: string): Promise<boolean | undefined> {
  return (await locks.inspect(name).catch(() => undefined))?.nodes?.[2]?.held;
}

it("sends a hung node nothing more once 100 requests to it are out past timeoutMs, says so once, and uses it again once it answers", async () => {
  const rig = await nodes(3);
  const { locks, counter } = countingLockSet(rig, uniquePrefix("hung"));
  const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  await (await locks.acquire("warm")).release();
  rig.stop(2);
  await shutOut(locks);
  const sent = counter.sent;
  for (let i = 0; i < 40; i++) await (await locks.acquire(`job-${i % 4}`)).release();
  expect(counter.sent).toBe(sent);
  expect(warn.mock.calls.map(String).filter((call) => call.includes("redis[2]"))).toEqual([
    expect.stringMatching(/redis\[2\].*100 requests.*unanswered/),
  ]);
  // Resumed, it answers what it was sent, and is used again.
  rig.cont(2);
  await until(async () => (await heldOnNode2(locks, "job-0")) === false, 10_000);
  expect(counter.sent).toBeGreaterThan(sent);
});

// Heartbeats sent before it was shut out run when it resumes and extend its hold: the release,
// skipped meanwhile, must follow them, or the node keeps a released lock for a whole lease.
it("sends a lease's release to a node it was skipped on once the node answers again", async () => {
  const rig = await nodes(3);
  const { locks } = countingLockSet(rig, uniquePrefix("hung-release"));
  vi.spyOn(console, "warn").mockImplementation(() => undefined);
  const lease = await locks.acquire("orders");
  rig.stop(2);
  for (let i = 0; i < 3; i++) await lease.heartbeat();
  await shutOut(locks);
  expect(await lease.release()).toBe("released");
  rig.cont(2);
  // Well within the 30 s lease that a heartbeat gave node 2's hold when it resumed.
  await until(async () => (await heldOnNode2(locks, "orders")) === false, 10_000);
});
