// Throwaway redis-server processes, for the local server and for tests.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RedisServerNotFoundError, RedisServerStartError } from "./errors.ts";
import { freePort } from "./free-port.ts";
import { describeSearch, findRedisServerBinary, majorVersion } from "./redis-binary.ts";

export interface RedisServerOptions {
  /** Fixed port, e.g. to restart Redis where a client expects it; default: a free port. */
  port?: number;
  /** Path to redis-server; default: REDIS_SERVER_BIN, else the first redis-server on PATH. */
  binary?: string;
  /** Require this password (requirepass); `url` then carries it. Default: none. */
  password?: string;
  /** Allow DEBUG (DEBUG SLEEP in fault tests); default false (Redis 6 allows it always). */
  enableDebugCommand?: boolean;
  /** More redis-server arguments, after the defaults (the last value wins): ["--replicaof", "127.0.0.1", "6380"]. */
  args?: readonly string[];
  /** Variables added to this process's environment for redis-server: { LD_PRELOAD: "/tmp/shim.so" }. */
  env?: Readonly<Record<string, string>>;
}

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Resolves, saying how, once the process has ended: after stop(), or on its own (killed, crashed). */
  exited: Promise<string>;
}

const READY_TIMEOUT_MS = 5_000;
const STOP_GRACE_MS = 3_000;

/**
 * Starts a throwaway redis-server on 127.0.0.1 (no persistence, no DEBUG or MODULE unless asked)
 * and resolves once it answers.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = findRedisServerBinary(options.binary);
  if (!binary) throw new RedisServerNotFoundError(describeSearch(options.binary));
  // Another process can take a probed free port before redis binds it; then try a fresh one.
  const attempts = options.port === undefined ? 3 : 1;
  let failure: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await launch(binary, port, options);
    } catch (error) {
      failure = error;
      if (!(error instanceof RedisServerStartError && /address already in use/i.test(error.message))) break;
    }
  }
  throw failure;
}

async function launch(binary: string, port: number, options: RedisServerOptions): Promise<RedisServer> {
  const { password, args = [], env = {} } = options;
  const redis7 = (await majorVersion(binary)) >= 7;
  // Its own dir: Redis loads dump.rdb from its dir at start, and one in the shared temp dir may be anyone's.
  const dir = await mkdtemp(join(tmpdir(), "fencelock-redis-"));
  const child = spawn(binary, [...serverArgs(port, dir, options, redis7), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const output = collectOutput(child);
  const exited = new Promise<string>((resolve) => {
    child.once("error", (error) => resolve(error.message));
    child.once("exit", (code, signal) => resolve(`exited with ${signal ?? `code ${code}`}`));
  });
  // Node runs no "exit" listener after a fatal signal, but it does on normal exit and uncaught errors.
  const killOnExit = () => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", killOnExit);
  try {
    await waitUntilServing(port, password, child.pid, exited);
  } catch (error) {
    process.off("exit", killOnExit);
    child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    const detail = output().trim();
    throw new RedisServerStartError(
      `redis-server (${binary}) on port ${port} did not start: ${(error as Error).message}${detail ? `\n${detail}` : ""}`,
      { cause: error },
    );
  }
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= terminate(child, exited).finally(() => {
    process.off("exit", killOnExit);
    return rm(dir, { recursive: true, force: true });
  }));
  const auth = password === undefined ? "" : `:${encodeURIComponent(password)}@`;
  return { url: `redis://${auth}127.0.0.1:${port}`, port, stop, exited };
}

function serverArgs(port: number, dir: string, { password, enableDebugCommand = false }: RedisServerOptions, redis7: boolean): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
    "--daemonize", "no", "--loglevel", "warning", "--dir", dir, "--protected-mode", "yes",
    ...(password === undefined ? [] : ["--requirepass", password]),
    // Redis 7's defaults, spelled out so that no build changes them: no DEBUG, MODULE LOAD or
    // CONFIG SET dir (a client could write files anywhere). Redis 6 refuses these names.
    ...(redis7 ? ["--enable-debug-command", enableDebugCommand ? "yes" : "no", "--enable-module-command", "no",
      "--enable-protected-configs", "no"] : [])];
}

/** Resolves once the redis-server answering on `port` is this child, not some other process. */
async function waitUntilServing(
  port: number,
  password: string | undefined,
  pid: number | undefined,
  exited: Promise<string>,
): Promise<void> {
  // ioredis queues the command and keeps reconnecting until redis-server listens.
  const probe = new Redis({ host: "127.0.0.1", port, password, retryStrategy: () => 20, maxRetriesPerRequest: null });
  probe.on("error", () => {}); // connection refusals are expected until the server is up
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
  });
  const died = exited.then((how) => Promise.reject(new Error(how)));
  try {
    const info = await Promise.race([probe.info("server"), died, timeout]);
    const answering = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
    if (answering !== pid) throw new Error(`Address already in use: redis-server pid ${answering} answers there`);
  } finally {
    clearTimeout(timer);
    probe.disconnect();
  }
}

async function terminate(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), STOP_GRACE_MS);
  });
  const outcome = await Promise.race([exited, grace]);
  clearTimeout(timer);
  if (outcome === "timeout") {
    child.kill("SIGKILL");
    await exited;
  }
}

/** Keeps the last few KB of redis-server's output for error messages (and drains the pipes). */
function collectOutput(child: ChildProcess): () => string {
  let tail = "";
  const append = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-4096);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  return () => tail;
}
