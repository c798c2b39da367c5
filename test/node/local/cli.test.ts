import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import { startLocalUpstash } from "../../../src/local/index.ts";
import { localRedis } from "../../support/local-client.ts";
import { key, rest } from "../../support/rest.ts";
import { until } from "../../support/until.ts";
import { openRaw } from "./sse-client.ts";

const BIN = fileURLToPath(new URL("../../../bin/fencelock.js", import.meta.url));
const DIST = fileURLToPath(new URL("../../../dist/local/index.js", import.meta.url));

/** A `node` on PATH, outside node_modules, that strips no types (before 22.6), such as a system Node 20. */
const NODE_WITHOUT_TYPES = (process.env.PATH ?? "").split(delimiter).filter((dir) => dir && !dir.includes("node_modules"))
  .map((dir) => join(dir, "node")).find((node) => {
    if (!existsSync(node)) return false;
    const [major = 0, minor = 0] = execFileSync(node, ["--version"], { encoding: "utf8" }).slice(1).split(".").map(Number);
    return major < 22 || (major === 22 && minor < 6);
  });
const running: ChildProcess[] = [];
// SIGTERM first: a SIGKILLed fencelock dev cannot stop its redis-server, which would outlive the test.
afterEach(async () => {
  await Promise.all(running.splice(0).filter((child) => child.exitCode === null).map(async (child) => {
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const stop = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(stop);
  }));
});

function fencelock(...args: string[]) {
  return fencelockOn(process.execPath, ...args);
}

function fencelockOn(node: string, ...args: string[]) {
  const child = spawn(node, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  running.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  return { child, exited, output: () => ({ stdout, stderr }) };
}

/**
 * Waits until `fencelock dev` printed both variables and, on stderr, the line naming its Redis (or
 * exited, which fails the test): the two pipes are read apart, so either may come first.
 */
async function printedEnv(run: ReturnType<typeof fencelock>): Promise<{ url: string; token: string }> {
  for (let waited = 0; waited < 10_000; waited += 25) {
    const url = /^UPSTASH_REDIS_REST_URL=(\S+)$/m.exec(run.output().stdout)?.[1];
    const token = /^UPSTASH_REDIS_REST_TOKEN=(\S+)$/m.exec(run.output().stdout)?.[1];
    if (url && token && /-> \S+;/.test(run.output().stderr)) return { url, token };
    if (run.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`fencelock dev printed no URL/token: ${JSON.stringify(run.output())}`);
}

/** The Redis URL `fencelock dev` printed on stderr (its private redis-server's, password included). */
function printedRedisUrl(run: ReturnType<typeof fencelock>): string {
  const url = /-> (redis:\/\/\S+);/.exec(run.output().stderr)?.[1];
  if (!url) throw new Error(`fencelock dev printed no Redis URL: ${JSON.stringify(run.output())}`);
  return url;
}

/** Whether a TCP connection to `port` is accepted. */
async function accepts(port: number): Promise<boolean> {
  const socket = connect(port, "127.0.0.1");
  const accepted = await new Promise<boolean>((resolve) => {
    socket.once("connect", () => resolve(true));
    socket.once("error", () => resolve(false));
  });
  socket.destroy();
  return accepted;
}

/** Fails unless nothing answers at `redisUrl` any more. */
async function expectStopped(redisUrl: string): Promise<void> {
  const probe = new Redis(redisUrl, { lazyConnect: true, retryStrategy: () => null });
  probe.on("error", () => {});
  await expect(probe.connect()).rejects.toThrow();
}

describe("fencelock dev", () => {
  it("prints the env lines, serves @upstash/redis, and exits 0 on SIGTERM, stopping its redis-server", async () => {
    const run = fencelock("dev");
    const server = await printedEnv(run);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const redis = localRedis({}, server);
    const k = key("cli");
    expect(await redis.set(k, "from the CLI")).toBe("OK");
    expect(await redis.get(k)).toBe("from the CLI");
    const config = await rest("/", { body: ["CONFIG", "SET", "protected-mode", "no"], ...server });
    expect(config).toMatchObject({ status: 400, json: { error: expect.stringMatching(/refused[\s\S]*--allow-admin-commands/) } });
    const redisUrl = printedRedisUrl(run);
    expect(redisUrl).toMatch(/^redis:\/\/:[\w-]+@127\.0\.0\.1:\d+$/); // its password, for TCP clients
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    await expectStopped(redisUrl);
  });

  // SIGHUP: a closed terminal. Two SIGINTs at once: Ctrl-C under `npm run`, where the terminal
  // signals the group and npm sends its child one more.
  it.each([[["SIGHUP"]], [["SIGINT", "SIGINT"]]] as const)("exits 0 on %j, stopping its redis-server", async (signals) => {
    const run = fencelock("dev");
    await printedEnv(run);
    const redisUrl = printedRedisUrl(run);
    for (const signal of signals) run.child.kill(signal);
    expect(await run.exited).toBe(0);
    await expectStopped(redisUrl);
  });

  // Process managers and a second `kill` send one more while close() drains a request (up to 5 s).
  it("exits 1 on a second signal while it drains, still stopping its redis-server", async () => {
    const run = fencelock("dev");
    const server = await printedEnv(run);
    const redisUrl = printedRedisUrl(run);
    // Headers and half a body: a request close() waits for.
    const port = Number(new URL(server.url).port);
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.token}\r\nContent-Length: 100\r\n\r\n["GET",`);
    // Answered after the server has read what came before it on the other connection.
    expect((await rest("/", { body: ["PING"], ...server })).json).toEqual({ result: "PONG" });
    run.child.kill("SIGTERM");
    // Taken once the listener is closed; a second signal within a second of it is the same request
    // (npm passes a Ctrl-C on as the terminal sends it).
    await until(async () => !(await accepts(port)), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(run.child.exitCode).toBeNull();
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(1);
    socket.destroy();
    await expectStopped(redisUrl);
  });

  // A clone or `npm link` has src/ beside dist/: a Node without type stripping runs dist/.
  it.skipIf(!NODE_WITHOUT_TYPES || !existsSync(DIST))("runs the build on a Node that cannot run TypeScript (Node 20)", async () => {
    const run = fencelockOn(NODE_WITHOUT_TYPES!, "dev");
    await printedEnv(run);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  // Nothing restarts it: answering 503 "reconnecting" for good would send the user the wrong way.
  it("says so and exits 1 when its redis-server dies (killed, out of memory)", async () => {
    const run = fencelock("dev");
    await printedEnv(run);
    const redisUrl = printedRedisUrl(run);
    const redis = new Redis(redisUrl);
    const pid = Number(/process_id:(\d+)/.exec(await redis.info("server"))?.[1]);
    redis.disconnect();
    process.kill(pid, "SIGKILL");
    expect(await run.exited).toBe(1);
    expect(run.output().stderr).toMatch(/fencelock dev: its redis-server exited with SIGKILL; stopping, run it again/);
  });

  it("uses --redis-url and --token, and exits 0 on SIGINT", async () => {
    const shared = inject("upstash");
    const run = fencelock("dev", "--redis-url", shared.redisUrl, "--token", "cli-token");
    const server = await printedEnv(run);
    expect(server.token).toBe("cli-token");
    const k = key("cli-shared");
    await localRedis({}, server).set(k, 7);
    expect(await localRedis().get(k)).toBe(7); // same Redis as the shared server
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
  });

  it("runs admin commands with --allow-admin-commands, and caps streams at --max-streams", async () => {
    const run = fencelock("dev", "--allow-admin-commands", "--max-streams", "1", "--max-connections", "8",
      "--headers-timeout-ms", "2000", "--request-timeout-ms", "5000");
    const server = await printedEnv(run);
    expect((await rest("/", { body: ["CONFIG", "GET", "protected-mode"], ...server })).json).toEqual({ result: ["protected-mode", "yes"] });
    const stream = await openRaw(`/subscribe/${key("cli-stream")}`, server);
    const refused = await rest(`/subscribe/${key("cli-refused")}`, { method: "POST", ...server });
    stream.abort();
    expect(refused).toMatchObject({ status: 503, json: { error: expect.stringMatching(/too many open streams \(1, maxStreams \/ --max-streams\)/) } });
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it.each([
    [["--max-streams", "0"], /^fencelock: --max-streams: expected at least 1\n/],
    [["--max-connections", "lots"], /^fencelock: --max-connections must be a whole number, got "lots"\n/],
    [["--headers-timeout-ms", "40000"], /^fencelock: --headers-timeout-ms: must be at most --request-timeout-ms \(30000\)\n/],
    [["--headers-timeout-ms", "2000", "--request-timeout-ms", "1000"], /^fencelock: --headers-timeout-ms: must be at most --request-timeout-ms \(1000\)\n/],
    [["--request-timeout-ms", "1e3"], /^fencelock: --request-timeout-ms must be a whole number/],
  ])("refuses %j with a usage error (exit 2), serving nothing", async (args, message) => {
    const run = fencelock("dev", ...args);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toMatch(message);
    expect(run.output().stderr).toMatch(/Usage:/);
    expect(run.output().stdout).toBe("");
  });

  it("prints usage for --help (exit 0) and for a bad option (exit 2)", async () => {
    const help = fencelock("--help");
    expect(await help.exited).toBe(0);
    expect(help.output().stdout).toMatch(/Usage: fencelock dev \[--port N\]/);
    const bad = fencelock("dev", "--port", "nope");
    expect(await bad.exited).toBe(2);
    expect(bad.output().stderr).toMatch(/--port must be an integer[\s\S]*Usage:/);
  });

  it("refuses to run with no command or an unknown one (exit 2, usage on stderr)", async () => {
    for (const [args, message] of [[[], "no command given"], [["serve"], "unknown command: serve"]] as const) {
      const run = fencelock(...args);
      expect(await run.exited).toBe(2);
      expect(run.output().stderr).toMatch(new RegExp(`fencelock: ${message}[\\s\\S]*Usage:`));
      expect(run.output().stdout).toBe("");
    }
  });

  it.each([[""], ["0"], ["1e3"], ["0x50"], ["65536"], ["80.5"], [" 80"]])("refuses --port %j with a usage error (exit 2), serving nothing", async (port) => {
    const run = fencelock("dev", "--port", port);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toMatch(/--port must be an integer from 1 to 65535[\s\S]*Usage:/);
    expect(run.output().stdout).toBe("");
  });

  // No client could send it: "Authorization: Bearer <token>" ends at whitespace.
  it.each([["an empty --token", ""], ["a --token with a space", "a b"], ["a --token a header cannot carry", "токен"]])("refuses %s with a usage error (exit 2)", async (_, token) => {
    const run = fencelock("dev", "--token", token);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toMatch(/^fencelock: --token: expected one or more visible ASCII characters \(no spaces\)\n[\s\S]*Usage:/);
    expect(run.output().stdout).toBe("");
  });

  it.each([["localhost:6379"], ["http://127.0.0.1:6379"]])("refuses --redis-url %j, which is no Redis URL, with a usage error (exit 2)", async (url) => {
    const run = fencelock("dev", "--redis-url", url);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toMatch(/^fencelock: --redis-url: must look like redis:\/\/[\s\S]*Usage:/);
  });
});

describe("startLocalUpstash", () => {
  it.each([[""], ["a b"], ["токен"], ["tok\u0000en"]])("refuses the token %j, which no client could send", async (token) => {
    await expect(startLocalUpstash({ token })).rejects.toMatchObject({ name: "LocalUpstashError", code: "BAD_OPTIONS" });
  });

  it("refuses a misspelled option, which would otherwise start a server with a random token", async () => {
    await expect(startLocalUpstash({ tokn: "secret" } as never)).rejects.toThrow(/unknown option "tokn"/);
  });

  it.each([-1, 1.5, Number.NaN, 70_000, "6379"])("refuses the port %j, saying which ports there are", async (port) => {
    await expect(startLocalUpstash({ port: port as never })).rejects.toMatchObject({
      name: "LocalUpstashError", code: "BAD_OPTIONS", message: expect.stringMatching(/^startLocalUpstash: port: expected/),
    });
  });

  it("refuses a Redis URL that is not one, instead of trying it as a socket path", async () => {
    for (const redisUrl of ["localhost:6379", "http://127.0.0.1:6379"]) {
      await expect(startLocalUpstash({ redisUrl })).rejects.toMatchObject({
        code: "BAD_OPTIONS",
        message: expect.stringMatching(/^startLocalUpstash: redisUrl: must look like redis:\/\//),
      });
    }
  });

  it.each([
    [{ maxStreams: 0 }, "maxStreams: expected at least 1"],
    [{ maxConnections: 1.5 }, "maxConnections: expected a whole number"],
    [{ headersTimeoutMs: 50 }, "headersTimeoutMs: must be at least 100 ms"],
    [{ headersTimeoutMs: 5_000, requestTimeoutMs: 4_000 }, "headersTimeoutMs: must be at most requestTimeoutMs (4000)"],
    [{ allowAdminCommands: "yes" }, "allowAdminCommands: expected true or false"],
  ])("refuses %j, naming the option", async (options, message) => {
    await expect(startLocalUpstash(options as never)).rejects.toMatchObject({
      code: "BAD_OPTIONS", message: expect.stringContaining(`startLocalUpstash: ${message}`),
    });
  });

  it.each([[{ host: "" }], [{ host: 5 }], [{ redisUrl: 6379 }], ["redis://localhost"]])("refuses %j before it starts anything", async (options) => {
    await expect(startLocalUpstash(options as never)).rejects.toMatchObject({ code: "BAD_OPTIONS" });
  });
});
