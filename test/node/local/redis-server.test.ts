import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { RedisServerNotFoundError, startRedisServer, type RedisServer } from "../../../src/local/index.ts";
import { freePort } from "../../../src/local/free-port.ts";
import { findRedisServerBinary } from "../../../src/local/redis-binary.ts";

const started: RedisServer[] = [];
const cleanupDirs: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.stop()));
  for (const dir of cleanupDirs.splice(0)) rmSync(dir, { recursive: true });
});

/**
 * A stand-in for redis-server that records its arguments and FENCELOCK_TEST_MARK, then becomes
 * the real one (same pid, as startRedisServer checks); `version` replaces its --version line.
 */
function wrapper(version?: string): { binary: string; recorded(file: "args" | "mark"): string } {
  const dir = mkdtempSync(join(tmpdir(), "fencelock-wrapper-"));
  cleanupDirs.push(dir);
  const fake = version === undefined ? "" : `[ "$1" = --version ] && { echo "${version}"; exit 0; }\n`;
  const script = `#!/bin/sh\n${fake}printf '%s\\n' "$@" > ${dir}/args\nprintf %s "$FENCELOCK_TEST_MARK" > ${dir}/mark\n` +
    `exec ${findRedisServerBinary()} "$@"\n`;
  writeFileSync(join(dir, "redis-server"), script, { mode: 0o755 });
  return { binary: join(dir, "redis-server"), recorded: (file) => readFileSync(join(dir, file), "utf8") };
}

async function ping(url: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on("error", () => {});
  try {
    await client.connect();
    return await client.ping();
  } finally {
    client.disconnect();
  }
}

describe("startRedisServer", () => {
  it("starts a redis-server on a free loopback port that answers PING, without persistence", async () => {
    const server = await startRedisServer();
    started.push(server);
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(await ping(server.url)).toBe("PONG");
    const client = new Redis(server.url);
    try {
      expect(await client.config("GET", "save")).toEqual(["save", ""]);
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "no"]);
      expect(await client.config("GET", "bind")).toEqual(["bind", "127.0.0.1"]);
    } finally {
      client.disconnect();
    }
  });

  // Redis loads dump.rdb from its dir at start, --save "" or not: one left in the temp dir by any
  // other redis-server (or an earlier one that ran SAVE) must not come back.
  it("starts empty where the temp dir holds a dump.rdb, and leaves none there", async () => {
    const temp = mkdtempSync(join(tmpdir(), "fencelock-tmpdir-"));
    cleanupDirs.push(temp);
    const tmpdirWas = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    try {
      const first = await startRedisServer();
      started.push(first);
      const client = new Redis(first.url);
      await client.set("left-behind", "1");
      await client.save();
      // Where a server of its own dir saved it, put it where a stray one lies.
      const [, dir] = (await client.config("GET", "dir")) as [string, string];
      if (dir !== temp) copyFileSync(join(dir, "dump.rdb"), join(temp, "dump.rdb"));
      client.disconnect();
      await first.stop();
      expect(readdirSync(temp)).toEqual(["dump.rdb"]);
      const second = await startRedisServer();
      started.push(second);
      const fresh = new Redis(second.url);
      expect(await fresh.dbsize()).toBe(0);
      fresh.disconnect();
    } finally {
      process.env.TMPDIR = tmpdirWas;
      if (tmpdirWas === undefined) delete process.env.TMPDIR;
    }
  });

  it("stops the process: the port refuses connections afterwards, and stop() is idempotent", async () => {
    const server = await startRedisServer();
    await server.stop();
    await expect(ping(server.url)).rejects.toThrow();
    await expect(server.stop()).resolves.toBeUndefined();
  });

  it("starts on a given port, so Redis can be restarted where clients expect it", async () => {
    const port = await freePort();
    const first = await startRedisServer({ port });
    expect(first.port).toBe(port);
    await first.stop();
    const second = await startRedisServer({ port });
    started.push(second);
    expect(await ping(`redis://127.0.0.1:${port}`)).toBe("PONG");
  });

  it("fails with the output of redis-server when it cannot start (port taken)", async () => {
    const server = await startRedisServer();
    started.push(server);
    await expect(startRedisServer({ port: server.port })).rejects.toMatchObject({
      name: "RedisServerStartError",
      code: "REDIS_SERVER_START_FAILED",
      message: expect.stringMatching(/did not start[\s\S]*Address already in use/),
    });
  });

  it("refuses DEBUG unless enableDebugCommand, which fault tests need for DEBUG SLEEP", async () => {
    const [plain, debuggable] = await Promise.all([startRedisServer(), startRedisServer({ enableDebugCommand: true })]);
    started.push(plain, debuggable);
    const [a, b] = [new Redis(plain.url), new Redis(debuggable.url)];
    try {
      await expect(a.call("DEBUG", "SLEEP", "0")).rejects.toThrow(/DEBUG command not allowed/);
      expect(await b.call("DEBUG", "SLEEP", "0")).toBe("OK");
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });

  it("passes extra arguments and environment variables to redis-server", async () => {
    const { binary, recorded } = wrapper();
    const server = await startRedisServer({ binary, args: ["--maxmemory", "12mb"], env: { FENCELOCK_TEST_MARK: "shim" } });
    started.push(server);
    const client = new Redis(server.url);
    try {
      expect(await client.config("GET", "maxmemory")).toEqual(["maxmemory", String(12 * 1024 * 1024)]);
      expect(recorded("mark")).toBe("shim");
    } finally {
      client.disconnect();
    }
  });

  it("starts a Redis 6 too, leaving out the Redis 7 settings it would refuse", async () => {
    const { binary, recorded } = wrapper("Redis server v=6.0.16 sha=00000000:0 malloc=jemalloc-5.2.1 bits=64");
    started.push(await startRedisServer({ binary }));
    expect(recorded("args")).toMatch(/--protected-mode\nyes\n/);
    expect(recorded("args")).not.toMatch(/enable-(debug|module)-command|enable-protected-configs/);
  });

  it("requires the password it was given, which its url carries", async () => {
    const server = await startRedisServer({ password: "s3cret" });
    started.push(server);
    expect(server.url).toBe(`redis://:s3cret@127.0.0.1:${server.port}`);
    expect(await ping(server.url)).toBe("PONG");
    const anonymous = new Redis({ host: "127.0.0.1", port: server.port, enableReadyCheck: false, maxRetriesPerRequest: 0 });
    anonymous.on("error", () => {});
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    anonymous.disconnect();
  });

  it("explains how to install Redis when the binary is missing", async () => {
    const failure = await startRedisServer({ binary: "/nonexistent/redis-server" }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RedisServerNotFoundError);
    expect(failure).toMatchObject({ code: "REDIS_SERVER_NOT_FOUND" });
    expect((failure as Error).message).toMatch(/apt-get install -y redis-server/);
    expect((failure as Error).message).toMatch(/Redis URL/);
  });

  it("takes the binary from REDIS_SERVER_BIN", async () => {
    const saved = process.env.REDIS_SERVER_BIN;
    process.env.REDIS_SERVER_BIN = "/nonexistent/from-env";
    try {
      await expect(startRedisServer()).rejects.toThrow(/REDIS_SERVER_BIN=\/nonexistent\/from-env/);
    } finally {
      if (saved === undefined) delete process.env.REDIS_SERVER_BIN;
      else process.env.REDIS_SERVER_BIN = saved;
    }
  });
});
