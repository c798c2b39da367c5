// A Sentinel-managed failover, survived through fromIoredis(new Redis({ sentinels, name })).
//
// What holds: once Sentinel has promoted the replica, locks work again through the same client,
// and a new lease's fence is higher than any minted before the failover (fences come from the
// server's TIME and rise across it; see guarantees.md for the clock condition).
// What does not: replication is asynchronous, so a lease taken just before the primary died may
// be missing on the promoted replica and be granted again while its first holder still works.
// The fence is what makes that safe: the second holder's is higher, so storage refuses the first.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLocks, LockUnavailableError, type Lease } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { startRedisServer, type RedisServer } from "../../../../src/local/index.ts";
import { freePort } from "../../../../src/local/free-port.ts";
import { findRedisServerBinary } from "../../../../src/local/redis-binary.ts";
import { uniquePrefix } from "../../../support/upstash.ts";
import { until } from "../../../support/until.ts";
import { observed } from "./observe.ts";

let primary: RedisServer;
let replica: RedisServer;
let sentinel: ChildProcess;
let sentinelPort: number;
let admin: Redis;
const config = join(tmpdir(), `fencelock-sentinel-${process.pid}-${Date.now()}.conf`);

/** One sentinel (quorum 1) watching `m`, quick to call the primary down and fail over. */
async function startSentinel(primaryPort: number): Promise<void> {
  // Another process can take the free port before the sentinel binds it: then it exits, and a fresh port is tried.
  for (let attempt = 1; ; attempt++) {
    sentinelPort = await freePort();
    writeFileSync(config, [
      `port ${sentinelPort}`, "bind 127.0.0.1", `dir ${tmpdir()}`,
      `sentinel monitor m 127.0.0.1 ${primaryPort} 1`,
      "sentinel down-after-milliseconds m 1000", "sentinel failover-timeout m 5000",
    ].join("\n"));
    sentinel = spawn(findRedisServerBinary()!, [config, "--sentinel"], { stdio: "ignore" });
    let exited = false;
    sentinel.once("exit", () => (exited = true));
    admin = new Redis({ port: sentinelPort, retryStrategy: () => 50, lazyConnect: false, commandTimeout: 2_000 });
    admin.on("error", () => {});
    // Ready once it has found the replica through the primary.
    await until(async () => exited || ((await admin.call("SENTINEL", "REPLICAS", "m").catch(() => [])) as unknown[]).length === 1, 15_000);
    if (!exited) return;
    admin.disconnect();
    if (attempt === 3) throw new Error(`the sentinel exited at start three times (last on port ${sentinelPort})`);
  }
}

const primaryPort = async () => Number(((await admin.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m")) as string[])[1]);
const otherPort = (port: number) => (port === primary.port ? replica.port : primary.port);
const info = async (client: Redis, section: string, field: string) => new RegExp(`${field}:(\\w+)`).exec(await client.info(section))?.[1];

/** A client through the sentinel, as docs/node.md writes it. */
function sentinelClient(): Redis {
  const client = new Redis({ sentinels: [{ host: "127.0.0.1", port: sentinelPort }], name: "m", failoverDetector: true });
  client.on("error", () => {}); // each refused reconnect while a primary is down
  return client;
}

beforeAll(async () => {
  primary = await startRedisServer();
  replica = await startRedisServer({ args: ["--replicaof", "127.0.0.1", String(primary.port)] });
  await startSentinel(primary.port);
});
afterAll(async () => {
  admin?.disconnect();
  sentinel?.kill("SIGKILL");
  rmSync(config, { force: true });
  await Promise.all([primary?.stop(), replica?.stop()]);
});

describe("a Sentinel failover", () => {
  // Without failoverDetector, ioredis keeps the old primary until Sentinel demotes it (~10 s), while
  // a client made after the failover uses the new one: both were granted the same lock.
  it("planned (SENTINEL FAILOVER): a client from before it and one made after it never hold a lock at once", async () => {
    const before = sentinelClient();
    const prefix = uniquePrefix("sentinel-planned");
    // Longer than Sentinel takes to demote the old primary and resync it (10-15 s), checked below.
    const locksBefore = createLocks({ redis: fromIoredis(before), prefix, leaseMs: 60_000 });
    await (await locksBefore.acquire("warm")).release();
    const from = await primaryPort();
    // NOGOODSLAVE until the sentinel has seen the replica in sync.
    await until(() => admin.call("SENTINEL", "FAILOVER", "m").then(() => true, () => false), 20_000);
    await until(async () => (await primaryPort()) === otherPort(from), 20_000);
    // The client has followed the switch (or answers nothing yet).
    await until(async () => Number(await info(before, "server", "tcp_port").catch(() => 0)) === otherPort(from), 10_000);
    const held = await locksBefore.acquire("job");
    const after = sentinelClient();
    expect(await createLocks({ redis: fromIoredis(after), prefix }).tryAcquire("job")).toBeNull();
    // Once Sentinel has demoted the old primary, the lease is still there, and in sync for the next test.
    const old = new Redis({ port: from });
    await until(async () => (await info(old, "replication", "master_link_status")) === "up", 30_000);
    await held.heartbeat();
    await held.release();
    old.disconnect();
    before.disconnect();
    after.disconnect();
  });

  it("unplanned (the primary killed): locks work again through the same client, with fences higher than before it", async () => {
    const client = sentinelClient();
    const { client: redis, seen } = await observed(fromIoredis(client));
    const prefix = uniquePrefix("sentinel");
    const locks = createLocks({ redis, prefix, leaseMs: 1_000 });
    const before = await locks.acquire("job");
    const from = await primaryPort();
    process.kill(Number(await info(client, "server", "process_id")), "SIGKILL");
    await until(async () => (await primaryPort()) === otherPort(from), 20_000);

    // Calls fail (LockUnavailableError) until the client has found the new primary.
    let after: Lease | undefined;
    await until(async () => {
      after = await locks.acquire("job", { waitMs: 2_000 }).catch((error: unknown) => {
        if (error instanceof LockUnavailableError) return undefined;
        throw error;
      });
      return after !== undefined;
    }, 20_000);
    expect(after!.fence).toBeGreaterThan(before.fence);

    // Push wake-ups too: a waiter is handed the lock by a message from the new primary.
    const waiting = createLocks({ redis, prefix }).acquire("job", { waitMs: 8_000 });
    await vi.waitFor(() => expect(seen.confirmations).toBe(1), { timeout: 5_000 });
    await after!.release();
    const handedOver = await waiting;
    expect(handedOver.fence).toBeGreaterThan(after!.fence);
    expect(seen.messages).toBe(1);
    await handedOver.release();
    client.disconnect();
  });
});
