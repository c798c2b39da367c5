import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../../../src/local/free-port.ts";
import { findRedisServerBinary } from "../../../src/local/redis-binary.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { ClockOffsetFile } from "./clock-shim.ts";

export interface RedisProcessOptions {
  /** A fixed port (a restart where clients expect it); default: a free one. */
  port?: number;
  replicaOf?: RedisProcess;
  /** Run under the clock shim (its .so path), its offset in this file. */
  clock?: { shim: string; file: ClockOffsetFile };
}

const READY_WITHIN_MS = 10_000;
/** Every redis-server this process started and has not seen exit: killed if the run dies. */
const running = new Set<ChildProcess>();
process.on("exit", () => running.forEach((child) => child.kill("SIGKILL")));

/** A throwaway redis-server on 127.0.0.1 (no persistence; DEBUG allowed, for DEBUG SLEEP), for a fault to hit. */
export class RedisProcess {
  readonly port: number;
  readonly label: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  #admin: Redis | undefined;

  private constructor(label: string, port: number, child: ChildProcess, dir: string) {
    this.label = label;
    this.port = port;
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once("exit", () => resolve()));
    running.add(child);
    void this.#exited.then(() => {
      running.delete(child);
      rmSync(dir, { recursive: true, force: true });
    });
  }

  static async start(label: string, options: RedisProcessOptions = {}): Promise<RedisProcess> {
    // Another process can take a free port before redis-server binds it: then a fresh one.
    for (let attempt = 1; ; attempt++) {
      const server = RedisProcess.#spawn(label, options.port ?? (await freePort()), options);
      const problem = await server.#waitUntilServing();
      if (!problem) return server;
      await server.kill();
      if (options.port !== undefined || attempt === 3) throw new Error(`redis-server ${label} on port ${server.port} ${problem}`);
    }
  }

  static #spawn(label: string, port: number, options: RedisProcessOptions): RedisProcess {
    const binary = findRedisServerBinary();
    if (!binary) throw new Error("redis-server is not on PATH (npm run faults installs it: scripts/ensure-redis.ts)");
    const dir = mkdtempSync(join(tmpdir(), "fencelock-faults-"));
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--daemonize", "no", "--loglevel", "warning", "--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0",
      "--dir", dir];
    if (options.replicaOf) args.push("--replicaof", "127.0.0.1", String(options.replicaOf.port));
    const env = options.clock
      ? { ...process.env, LD_PRELOAD: options.clock.shim, FAULT_CLOCK_FILE: options.clock.file.path }
      : process.env;
    return new RedisProcess(label, port, spawn(binary, args, { stdio: "ignore", env }), dir);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** A connection for the test's own commands (FLUSHALL, REPLICAOF, INFO, TIME). */
  get admin(): Redis {
    if (!this.#admin) {
      this.#admin = new Redis(this.port, "127.0.0.1", { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
      this.#admin.on("error", () => {}); // the faults close it on purpose
    }
    return this.#admin;
  }

  /** Redis' TIME, in ms since the epoch. */
  async timeMs(): Promise<number> {
    const [seconds, micros] = await this.admin.time();
    return Number(seconds) * 1000 + Number(micros) / 1000;
  }

  signal(signal: "SIGSTOP" | "SIGCONT"): void {
    this.#child.kill(signal);
  }

  /** SIGKILL: whatever was not replicated is gone. */
  async kill(): Promise<void> {
    this.#admin?.disconnect();
    this.#admin = undefined;
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
    await this.#exited;
  }

  /** Undefined once this child answers on its port; else what went wrong. */
  async #waitUntilServing(): Promise<string | undefined> {
    const started = performance.now();
    const exited = this.#exited.then(() => "exited at start (port taken?)");
    while (performance.now() - started < READY_WITHIN_MS) {
      const probe = new Redis(this.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      const info = probe.connect().then(() => probe.info("server")).catch(() => undefined);
      const answer = await Promise.race([info, exited]);
      probe.disconnect();
      if (answer?.startsWith("exited")) return answer;
      const pid = answer && Number(/^process_id:(\d+)/m.exec(answer)?.[1]);
      if (pid) return pid === this.#child.pid ? undefined : `is taken by redis-server pid ${pid}`;
      await sleep(50);
    }
    return `did not answer within ${READY_WITHIN_MS} ms`;
  }
}
