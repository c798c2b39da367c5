import { Redis } from "@upstash/redis";
import { createFencedStore } from "../../../src/index.ts";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";
import type { Form } from "./forms.ts";
import { History } from "./history.ts";
import { RedisProcess, type RedisProcessOptions } from "./redis-process.ts";
import { SwitchingProxy } from "./switching-proxy.ts";
import { Workload, type Endpoint } from "./workload.ts";

export interface ProxiedEndpoint extends Endpoint {
  proxy: SwitchingProxy;
}

/**
 * Everything one scenario runs on: the redis-servers the faults hit, the lock service's
 * addresses (proxy + real local server) in front of them, and the workload with its fenced store
 * on a local server and redis-server of its own. close() tears it all down, whatever state the
 * faults left it in.
 */
export class Rig {
  readonly history = new History();
  readonly form: Form;
  readonly workload: Workload;
  readonly names: string[];
  readonly prefix = `faults-${crypto.randomUUID().slice(0, 8)}`;
  readonly #servers: RedisProcess[] = [];
  readonly #closers: (() => Promise<void>)[] = [];

  private constructor(form: Form, storeServer: LocalUpstash) {
    this.form = form;
    this.names = Array.from({ length: form.names }, (_, i) => `n${i}`);
    const { prefix } = this;
    const store = createFencedStore({
      redis: new Redis({ url: storeServer.url, token: storeServer.token, enableTelemetry: false }),
      prefix,
      timeoutMs: 5_000,
    });
    this.workload = new Workload(this.history, store, {
      prefix, names: this.names, clients: form.clients, leaseMs: form.leaseMs, timeoutMs: form.timeoutMs,
    });
    this.#closers.push(() => storeServer.close());
  }

  static async open(form: Form): Promise<Rig> {
    return new Rig(form, await startLocalUpstash());
  }

  async redis(label: string, options: RedisProcessOptions = {}): Promise<RedisProcess> {
    const server = await RedisProcess.start(label, options);
    this.#servers.push(server);
    return server;
  }

  /** A local server (the real one, src/local) whose redisUrl is a proxy in front of `primary`. */
  async endpoint(primary: RedisProcess): Promise<ProxiedEndpoint> {
    const proxy = await SwitchingProxy.start(primary);
    this.#closers.push(() => proxy.close());
    const server = await startLocalUpstash({ redisUrl: proxy.url });
    this.#closers.push(() => server.close());
    return { url: server.url, token: server.token, proxy, era: () => proxy.target?.label ?? "none" };
  }

  /** Runs `close` when the rig closes, after the workload stopped and before the servers are killed. */
  onClose(close: () => Promise<void> | void): void {
    this.#closers.push(async () => close());
  }

  /**
   * Names the lost holders take: a few, spread over the names; another few in each `round`, so a
   * late write accepted in one round (outside the condition) cannot hide the next round's.
   */
  stragglerNames(round = 0): string[] {
    const step = Math.max(1, Math.floor(this.names.length / this.form.stragglers));
    return this.names.filter((_, i) => i % step === round % step).slice(0, this.form.stragglers);
  }

  /** Lets the workload run for `ms`, and until every lost holder so far has written. */
  async runFor(ms: number): Promise<void> {
    await Promise.all([new Promise((resolve) => setTimeout(resolve, ms)), this.workload.lateWritesDone()]);
  }

  async close(): Promise<void> {
    await this.workload.stop();
    for (const close of this.#closers.reverse()) await close().catch(() => undefined);
    await Promise.all(this.#servers.map((server) => server.kill()));
  }
}
