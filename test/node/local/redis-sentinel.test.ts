// The local server pointed at a Sentinel, which holds no data, refuses to start and says where to point it.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalUpstashError, RedisSentinelError, startLocalUpstash } from "../../../src/local/index.ts";
import { freePort } from "../../../src/local/free-port.ts";
import { findRedisServerBinary } from "../../../src/local/redis-binary.ts";
import { Redis } from "ioredis";
import { until } from "../../support/until.ts";

let sentinel: ChildProcess;
let port: number;
const config = join(tmpdir(), `fencelock-local-sentinel-${process.pid}-${Date.now()}.conf`);

beforeAll(async () => {
  port = await freePort();
  writeFileSync(config, `port ${port}\nbind 127.0.0.1\ndir ${tmpdir()}\n`);
  sentinel = spawn(findRedisServerBinary()!, [config, "--sentinel"], { stdio: "ignore" });
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => 50 });
  probe.on("error", () => {});
  // Ours, not another process that took the port meanwhile: a Sentinel, with the pid spawned.
  const ours = async () => {
    const info = await probe.info("server").catch(() => "");
    return /redis_mode:sentinel/.test(info) && new RegExp(`process_id:${sentinel.pid}\\b`).test(info);
  };
  await until(ours, 10_000);
  probe.disconnect();
});
afterAll(() => {
  sentinel?.kill("SIGKILL");
  rmSync(config, { force: true });
});

describe("the local server on a Sentinel", () => {
  it("refuses to start with RedisSentinelError, which says to point it at the primary", async () => {
    const error = await startLocalUpstash({ redisUrl: `redis://127.0.0.1:${port}` }).then(() => new Error("started"), (e: unknown) => e);
    expect(error).toBeInstanceOf(RedisSentinelError);
    expect(error).toBeInstanceOf(LocalUpstashError);
    expect(error).toMatchObject({ name: "RedisSentinelError", code: "REDIS_SENTINEL" });
    expect((error as Error).message).toMatch(new RegExp(`redis://127\\.0\\.0\\.1:${port}/? is a Sentinel .*SENTINEL GET-MASTER-ADDR-BY-NAME`));
  });
});
