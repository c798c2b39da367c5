import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { Redis as IORedis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { RedisUnavailableError, startLocalUpstash, startRedisServer, type LocalUpstash } from "../../../src/local/index.ts";
import { freePort } from "../../../src/local/free-port.ts";
import { findRedisServerBinary } from "../../../src/local/redis-binary.ts";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";
import { until } from "../../support/until.ts";
import { busyScript } from "./busy-script.ts";

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function serverOverOwnRedis() {
  let redisServer = await startRedisServer();
  cleanup.push(() => redisServer.stop());
  const local = await startLocalUpstash({ redisUrl: redisServer.url });
  cleanup.push(() => local.close());
  const restart = async () => {
    redisServer = await startRedisServer({ port: redisServer.port });
  };
  return { local, redis: localRedis({}, local), stopRedis: () => redisServer.stop(), restart };
}

async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe("when Redis goes away", () => {
  it("fails requests within a second with a 503 JSON error, and the client throws", async () => {
    const { local, redis, stopRedis } = await serverOverOwnRedis();
    await stopRedis();
    const started = performance.now();
    await expect(redis.get(key("down"))).rejects.toThrow(/Redis is unavailable/);
    for (const path of ["/", "/pipeline", "/multi-exec"]) {
      const body = path === "/" ? ["GET", "k"] : [["GET", "k"]];
      const { status, json } = await rest(path, { url: local.url, token: local.token, body });
      expect(status).toBe(503);
      expect(json).toEqual({ error: expect.stringMatching(/^ERR Redis is unavailable/) });
    }
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("recovers when redis-server comes back on the same port, for commands and transactions", async () => {
    const { redis, stopRedis, restart } = await serverOverOwnRedis();
    const k = key("restart");
    expect(await redis.multi().set(k, "before").get(k).exec()).toEqual(["OK", "before"]);
    await stopRedis();
    await expect(redis.get(k)).rejects.toThrow(/unavailable/);
    await restart();
    // The restarted server has no persistence, so the key is gone; writes work again.
    await eventually(() => redis.set(k, "after"));
    expect(await redis.get(k)).toBe("after");
    expect(await eventually(() => redis.multi().incr(k + ":n").incr(k + ":n").exec())).toEqual([1, 2]);
  });

  it("says the connection was lost, in plain words, for a request in flight and the ones after", async () => {
    const { local } = await serverOverOwnRedis();
    const auth = { url: local.url, token: local.token };
    const info = (await rest("/", { body: ["INFO", "server"], ...auth })).json as { result: string };
    const pid = Number(/process_id:(\d+)/.exec(info.result)?.[1]);
    const inFlight = rest("/", { body: ["EVAL", busyScript(500), 1, key("lost")], ...auth });
    await new Promise((resolve) => setTimeout(resolve, 100));
    process.kill(pid, "SIGKILL");
    // Not ioredis' "Reached the max retries per request limit" / "enableOfflineQueue options is false".
    expect(await inFlight).toMatchObject({
      status: 503,
      json: { error: "ERR Redis is unavailable: the connection to Redis was lost before it answered (the command may have run)" },
    });
    expect(await rest("/", { body: ["PING"], ...auth })).toMatchObject({
      status: 503,
      json: { error: "ERR Redis is unavailable: not connected to Redis, reconnecting (the command did not run)" },
    });
  });
});

describe("startLocalUpstash", () => {
  it("rejects promptly with RedisUnavailableError when the given Redis is unreachable", async () => {
    const port = await freePort();
    const started = performance.now();
    const failure = await startLocalUpstash({ redisUrl: `redis://:secret@127.0.0.1:${port}` }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RedisUnavailableError);
    expect(failure).toMatchObject({ code: "REDIS_UNAVAILABLE", name: "RedisUnavailableError" });
    expect((failure as Error).message).not.toContain("secret");
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("says why it could not connect and what to do: a refused connection", async () => {
    const port = await freePort();
    await expect(startLocalUpstash({ redisUrl: `redis://127.0.0.1:${port}` })).rejects.toThrow(
      /ECONNREFUSED.*start redis-server, or check the host and port/,
    );
  });

  it("says why it could not connect and what to do: a missing or wrong password", async () => {
    const redisServer = await startRedisServer();
    cleanup.push(() => redisServer.stop());
    const admin = new IORedis(redisServer.url);
    await admin.config("SET", "requirepass", "secret");
    admin.disconnect();
    await expect(startLocalUpstash({ redisUrl: redisServer.url })).rejects.toThrow(/NOAUTH.*requires a password/);
    await expect(startLocalUpstash({ redisUrl: redisServer.url.replace("//", "//:wrong@") })).rejects.toThrow(
      /WRONGPASS.*password in the Redis URL is wrong/,
    );
  });

  it("gives up within seconds on a Redis URL that accepts connections but never replies", async () => {
    // A paused redis-server, a dead port-forward, or some other service on that port.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket.on("data", () => undefined)));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanup.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const { port } = silent.address() as { port: number };
    const started = performance.now();
    await expect(startLocalUpstash({ redisUrl: `redis://127.0.0.1:${port}` })).rejects.toMatchObject({
      name: "RedisUnavailableError",
      message: expect.stringMatching(/connected, but no reply within 3000 ms/),
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    const closedOnItsSide = async () => [...sockets].every((socket) => socket.readableEnded || socket.destroyed);
    await until(closedOnItsSide, 1_000); // and it hung up rather than leave the connection open
  });

  it("names a Unix socket path it could not reach, rather than calling it an invalid URL", async () => {
    const path = `${tmpdir()}/fencelock-missing-${crypto.randomUUID()}.sock`;
    await expect(startLocalUpstash({ redisUrl: path })).rejects.toThrow(`Redis is unavailable at ${path}: `);
  });

  it("serves a Redis on a Unix socket, subscriptions included", async () => {
    const dir = await mkdtemp(`${tmpdir()}/fencelock-socket-`);
    const path = `${dir}/redis.sock`;
    const binary = findRedisServerBinary() ?? "redis-server";
    const child = spawn(binary, ["--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
    cleanup.push(async () => {
      child.kill();
      await rm(dir, { recursive: true, force: true });
    });
    const local = await eventually(() => startLocalUpstash({ redisUrl: path }));
    cleanup.push(() => local.close());
    const redis = localRedis({}, local);
    const channel = key("socket");
    const subscriber = redis.subscribe(channel);
    const messages: unknown[] = [];
    subscriber.on("message", (event) => messages.push(event.message));
    await until(async () => (await redis.publish(channel, "over the socket")) === 1, 3_000);
    await until(async () => messages.length === 1, 3_000);
    expect(messages).toEqual(["over the socket"]);
    await subscriber.unsubscribe();
  });

  it("uses the given token and port, and close() ends keep-alive connections promptly", async () => {
    const port = await freePort();
    const local: LocalUpstash = await startLocalUpstash({ token: "given-token", port });
    let closed = false;
    cleanup.push(() => (closed ? Promise.resolve() : local.close()));
    expect(local.url).toBe(`http://127.0.0.1:${port}`);
    expect(local.token).toBe("given-token");
    const redis = localRedis({ retry: false }, local);
    expect(await redis.ping()).toBe("PONG"); // leaves fetch's keep-alive socket open
    const started = performance.now();
    await local.close();
    closed = true;
    expect(performance.now() - started).toBeLessThan(1_000);
    await expect(fetch(local.url, { method: "POST", body: '["PING"]' })).rejects.toThrow();
    await expect(local.close()).resolves.toBeUndefined();
  });

  it("generates a different random token for each server", async () => {
    const [a, b] = await Promise.all([startLocalUpstash(), startLocalUpstash()]);
    cleanup.push(() => a.close(), () => b.close());
    expect(a.token).toMatch(/^[\w-]{32}$/);
    expect(a.token).not.toBe(b.token);
    expect(a.redisUrl).not.toBe(b.redisUrl);
  });
});
