// The local server pointed at a Redis Cluster node refuses to start, saying what to use instead.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LocalUpstashError, RedisClusterError, startLocalUpstash } from "../../../src/local/index.ts";
import { startRedisCluster, type RedisCluster } from "../../support/redis-cluster.ts";
import { until } from "../../support/until.ts";

const BIN = fileURLToPath(new URL("../../../bin/fencelock.js", import.meta.url));
const ADVICE = /is a Redis Cluster node \(cluster_enabled:1\)[\s\S]*standalone Redis[\s\S]*fencelock\/ioredis \(fromIoredis\(new Cluster\(\[\.\.\.\]\)\)\)[\s\S]*fencelock\/node-redis/;

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(() => cluster?.stop());

/** The local server's connections open on a node (by the name they set). */
async function localConnections(port: number): Promise<number> {
  const node = cluster.masters.find((m) => m.port === port)!;
  const list = String(await node.admin.call("CLIENT", "LIST"));
  return list.split("\n").filter((line) => /name=fencelock-local/.test(line)).length;
}

describe("the local server on a Redis Cluster node", () => {
  it("refuses to start with RedisClusterError, which says what to use, and leaves no connection open", async () => {
    const { port } = cluster.masters[1]!;
    const error = await startLocalUpstash({ redisUrl: `redis://127.0.0.1:${port}` }).then(() => new Error("started"), (e: unknown) => e);
    expect(error).toBeInstanceOf(RedisClusterError);
    expect(error).toBeInstanceOf(LocalUpstashError);
    expect(error).toMatchObject({ name: "RedisClusterError", code: "REDIS_CLUSTER", message: expect.stringMatching(ADVICE) });
    expect((error as Error).message).toContain(`redis://127.0.0.1:${port}`);
    await until(async () => (await localConnections(port)) === 0, 5_000);
  });

  it("masks the password in the URL it names", async () => {
    const { port, admin } = cluster.masters[0]!;
    await admin.call("CONFIG", "SET", "requirepass", "cluster-s3cret");
    try {
      const error = await startLocalUpstash({ redisUrl: `redis://:cluster-s3cret@127.0.0.1:${port}` }).then(() => new Error("started"), (e: unknown) => e as Error);
      expect(error).toBeInstanceOf(RedisClusterError);
      expect(error.message).toContain(`redis://:***@127.0.0.1:${port}`);
      expect(error.message).not.toContain("s3cret");
    } finally {
      await admin.call("CONFIG", "SET", "requirepass", "");
    }
  });

  it("still starts on a standalone Redis", async () => {
    const server = await startLocalUpstash({ redisUrl: inject("upstash").redisUrl });
    await server.close();
  });

  it("fencelock dev --redis-url <cluster node> prints the advice and exits 1, serving nothing", async () => {
    const { port } = cluster.masters[2]!;
    const child = spawn(process.execPath, [BIN, "dev", "--redis-url", `redis://127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    // Were it to start, it would serve until killed.
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const [code] = await once(child, "exit").finally(() => clearTimeout(timer));
    expect(code).toBe(1);
    expect(stderr).toMatch(/^fencelock: Redis at redis:\/\/127\.0\.0\.1:\d+\/? is a Redis Cluster node/);
    expect(stderr).toMatch(ADVICE);
    expect(stderr).not.toMatch(/Usage:/);
    expect(stdout).toBe("");
  });
});
