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
  sentinelPort = await freePort();
  writeFileSync(config, [
    `port ${sentinelPort}`, "bind 127.0.0.1", `dir ${tmpdir()}`,
    `sentinel monitor m 127.0.0.1 ${primaryPort} 1`,
    "sentinel down-after-milliseconds m 1000", "sentinel failover-timeout m 5000",
  ].join("\n"));
  sentinel = spawn(findRedisServerBinary()!, [config, "--sentinel"], { stdio: "ignore" });
  admin = new Redis({ port: sentinelPort, retryStrategy: () => 50, lazyConnect: false });
  admin.on("error", () => {});
  // Ready once it has found the replica through the primary.
  await until(async () => ((await admin.call("SENTINEL", "REPLICAS", "m").catch(() => [])) as unknown[]).length === 1, 15_000);
}

const primaryPort = async () => Number(((await admin.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m")) as string[])[1]);

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
  it("is survived: locks work again through the same client, with fences higher than before it", async () => {
    const client = new Redis({ sentinels: [{ host: "127.0.0.1", port: sentinelPort }], name: "m" });
    client.on("error", () => {}); // each refused reconnect while the primary is down
    const { client: redis, seen } = await observed(fromIoredis(client));
    const prefix = uniquePrefix("sentinel");
    const locks = createLocks({ redis, prefix, leaseMs: 1_000 });
    const before = await locks.acquire("job");
    expect(await primaryPort()).toBe(primary.port);

    const info = await client.info("server");
    process.kill(Number(/process_id:(\d+)/.exec(info)?.[1]), "SIGKILL");
    await until(async () => (await primaryPort()) === replica.port, 20_000);

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
