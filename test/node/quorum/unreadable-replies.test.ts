// Quorum mode when nodes' replies cannot be read: an acquire leaves no hold behind on any node, won or lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError, QuorumUnavailableError, type Locks, type RedisClient } from "../../../src/index.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { QuorumNodes } from "../../support/quorum/nodes.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

// Long, so that a hold left until its lease ends cannot pass for one given back.
const LEASE_MS = 60_000;

// One rig for the file: every test has its own prefix, and none puts a fault on a node.
let rig: QuorumNodes;
beforeAll(async () => {
  rig = await QuorumNodes.start(3);
});
afterAll(() => rig?.close());

/** `real`, its replies held back `delayMs` and, when `reply` is given, replaced by it (each script still runs on its node). */
function garbled(real: RedisClient, reply: unknown, delayMs = 0): RedisClient {
  const swap = async (sent: Promise<unknown>) => {
    const value = await sent;
    if (delayMs) await sleep(delayMs);
    return reply === undefined ? value : reply;
  };
  return { evalsha: (sha, keys, args) => swap(real.evalsha(sha, keys, args)), eval: (text, keys, args) => swap(real.eval(text, keys, args)) };
}

/** A quorum lock set whose clients garble on the nodes in `garbling`, and answer late by `delays` (ms by node). */
function locksWith(prefix: string, reply: unknown, garbling: number[], delays: Record<number, number> = {}): Locks {
  const clients = rig.clients.map((client, i) => garbled(client, garbling.includes(i) ? reply : undefined, delays[i]));
  return createLocks({ redis: clients, prefix, leaseMs: LEASE_MS, timeoutMs: 2_000, waitMs: 2_000 });
}

/** Every node shows the lock free, well before a lease could end; then the observer takes it. */
async function freeOnEveryNode(observer: Locks, name: string): Promise<void> {
  await until(async () => (await observer.inspect(name)).nodes?.every((node) => node !== null && !node.held) ?? false, 5_000);
  const lease = await observer.tryAcquire(name);
  expect(lease?.fence).toBeGreaterThan(0);
  await lease?.release();
}

describe.each([
  ["integers as text", ["1", "5", "1", "1000"]],
  ["an empty array", []],
  ['"OK"', "OK"],
])("on 3 nodes, replies of %s", (_, reply) => {
  const setup = (label: string, garbling: number[]) => {
    const prefix = uniquePrefix(label);
    return { prefix, locks: locksWith(prefix, reply, garbling), observer: rig.locks(prefix) };
  };

  it.each([
    ["tryAcquire", (locks: Locks) => locks.tryAcquire("job")],
    ["acquire with waitMs 2000", (locks: Locks) => locks.acquire("job")],
  ])("from every node: %s rejects with QuorumUnavailableError, leaving no hold on any node", async (_, call) => {
    const { locks, observer } = setup("q-unreadable-all", [0, 1, 2]);
    const error = await call(locks).then(() => new Error("expected a rejection"), (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/0 of 3 Redis nodes answered/);
    expect(error.message).toMatch(/an unexpected reply.*a lock it took is given back/);
    await freeOnEveryNode(observer, "job");
  });

  it("from one node: the lease holds on the others, and after its release no node holds the lock", async () => {
    const { locks, observer } = setup("q-unreadable-one", [0]);
    const lease = await locks.acquire("job");
    expect(await observer.tryAcquire("job")).toBeNull();
    expect(await lease.release()).toBe("released");
    await freeOnEveryNode(observer, "job");
  });

  // Before the vote: its reply failed while the others' were out; after: the lease was already returned.
  it.each([
    ["before the vote", { 1: 200, 2: 200 }],
    ["after the vote", { 0: 300 }],
  ])("from one node that minted another fence, %s: after the release no node holds the lock", async (_, delays) => {
    const prefix = uniquePrefix("q-unreadable-fence");
    const locks = locksWith(prefix, reply, [0], delays);
    const observer = rig.locks(prefix);
    // Node 0 knows a fence far ahead, so its grant carries another fence than the lease's: the
    // lease's release does not reach that hold.
    await rig.redis(0).admin.hset(lockKeys(prefix, "job").fence, "last", String((Date.now() + 600_000) * 1_000));
    const lease = await locks.acquire("job");
    expect(lease.fence).toBeLessThan((Date.now() + 300_000) * 1_000);
    expect(await lease.release()).toBe("released");
    await freeOnEveryNode(observer, "job");
  });

  it("from one node while another is busy: the attempt loses, and gives back the unreadable node's hold", async () => {
    const { prefix, locks, observer } = setup("q-unreadable-busy", [0]);
    // Node 1 alone held by someone else: no majority is free without node 0's unreadable grant.
    const other = await createLocks({ redis: rig.clients[1]!, prefix, leaseMs: LEASE_MS }).acquire("job");
    expect(await locks.tryAcquire("job")).toBeNull();
    await until(async () => (await observer.inspect("job")).nodes?.[0]?.held === false, 5_000);
    expect((await observer.inspect("job")).nodes?.[2]?.held).toBe(false);
    await other.release();
    await freeOnEveryNode(observer, "job");
  });
});

describe("on 3 nodes, one whose request outlives timeoutMs", () => {
  // As a client retrying in the background: the script lands on that node after the call moved on.
  it("has what that request takes given back when it lands, not before it", async () => {
    const prefix = uniquePrefix("q-late-request");
    const observer = rig.locks(prefix);
    await (await observer.tryAcquire("warm"))?.release(); // scripts loaded on every node
    let landed = false;
    const late = rig.clients[2]!;
    const acquireSha1 = scriptSha1(scripts.acquire);
    const delayed: RedisClient = {
      evalsha: (sha, keys, args) =>
        sha !== acquireSha1 || landed
          ? late.evalsha(sha, keys, args)
          : sleep(1_500).then(() => late.evalsha(sha, keys, args)).finally(() => (landed = true)),
      eval: (text, keys, args) => late.eval(text, keys, args),
    };
    const locks = createLocks({ redis: [rig.clients[0]!, rig.clients[1]!, delayed], prefix, leaseMs: LEASE_MS, timeoutMs: 300 });
    const lease = await locks.tryAcquire("job");
    expect(lease).not.toBeNull();
    await lease!.release();
    await until(async () => landed, 5_000);
    await freeOnEveryNode(observer, "job");
  });
});
