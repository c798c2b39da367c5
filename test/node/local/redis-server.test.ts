import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { RedisServerNotFoundError, startRedisServer, type RedisServer } from "../../../src/local/index.ts";
import { freePort } from "../../../src/local/free-port.ts";

const started: RedisServer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.stop()));
});

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
