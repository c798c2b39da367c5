// The model test's nodes: N redis-servers, each under the clock shim (when it builds), behind a
// switching proxy and a real local server, with the faults a node can suffer: restarted empty,
// paused, its clock shifted.
import { Redis } from "@upstash/redis";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";
import { ClockOffsetFile } from "../faults/clock-shim.ts";
import { RedisProcess } from "../faults/redis-process.ts";
import { SwitchingProxy } from "../faults/switching-proxy.ts";
import { until } from "../until.ts";

export interface ModelNode {
  readonly index: number;
  readonly proxy: SwitchingProxy;
  readonly server: LocalUpstash;
  /** Its clock's offset file; undefined without the shim (no clock faults then). */
  readonly clock: ClockOffsetFile | undefined;
  /** The redis-server behind the address now. */
  redis: RedisProcess;
  /** Restarts so far: the label of the redis-server now is node<i>.<restarts>. */
  restarts: number;
  paused: boolean;
}

/** One @upstash/redis client per node, as one process would have. */
export type NodeClients = Redis[];

/** N independent nodes; each a fixed address in front of whichever redis-server is its now. */
export class ModelNodes {
  readonly nodes: ModelNode[] = [];
  readonly #shim: string | null;
  readonly #servers = new Set<RedisProcess>();

  private constructor(shim: string | null) {
    this.#shim = shim;
  }

  /** Starts `count` nodes, each under the clock shim when `shim` is given. */
  static async start(count: number, shim: string | null): Promise<ModelNodes> {
    const rig = new ModelNodes(shim);
    try {
      // One at a time: starting them at once on a busy 2-core box only slows each.
      for (let index = 0; index < count; index++) rig.nodes.push(await rig.#startNode(index));
    } catch (error) {
      await rig.close();
      throw error;
    }
    return rig;
  }

  async #startNode(index: number): Promise<ModelNode> {
    const clock = this.#shim ? new ClockOffsetFile(0) : undefined;
    const redis = await this.#redis(`node${index}.0`, clock);
    const proxy = await SwitchingProxy.start(redis);
    const server = await startLocalUpstash({ redisUrl: proxy.url });
    return { index, proxy, server, clock, redis, restarts: 0, paused: false };
  }

  async #redis(label: string, clock: ClockOffsetFile | undefined): Promise<RedisProcess> {
    const shim = this.#shim;
    const server = await RedisProcess.start(label, clock && shim ? { clock: { shim, file: clock } } : {});
    this.#servers.add(server);
    return server;
  }

  get clockFaults(): boolean {
    return this.#shim !== null;
  }

  /** Fresh clients for every node, with a quick retry of a lost request. */
  clients(retries = 1): NodeClients {
    return this.nodes.map(({ server }) => clientOf(server, retries));
  }

  /** Whether `url` is node i's address (to route a request through that node's network). */
  nodeOf(url: string): number {
    return this.nodes.findIndex(({ server }) => url.startsWith(server.url));
  }

  /** SIGSTOP: the node takes requests and answers none until resume(). */
  pause(i: number): void {
    const node = this.nodes[i]!;
    node.redis.signal("SIGSTOP");
    node.paused = true;
  }

  resume(i: number): void {
    const node = this.nodes[i]!;
    node.redis.signal("SIGCONT");
    node.paused = false;
  }

  /** Shifts node i's wall clock (Redis TIME and key expiry) to `offsetMs` from true time, at once. */
  setClock(i: number, offsetMs: number): void {
    const { clock } = this.nodes[i]!;
    if (!clock) throw new Error("clock faults need the clock shim");
    clock.set(offsetMs);
  }

  clockOffsetMs(i: number): number {
    return this.nodes[i]!.clock?.offsetMs ?? 0;
  }

  /**
   * Node i loses everything: its redis-server is SIGKILLed and an empty one (same clock file) takes
   * its place behind the same address. Resolves once the new one serves (the local server
   * reconnects on its own; requests meanwhile fail).
   */
  async restartEmpty(i: number): Promise<void> {
    const node = this.nodes[i]!;
    const old = node.redis;
    node.proxy.switchTo(null);
    if (node.paused) old.signal("SIGCONT");
    node.paused = false;
    await old.kill();
    this.#servers.delete(old);
    node.restarts++;
    node.redis = await this.#redis(`node${i}.${node.restarts}`, node.clock);
    node.proxy.switchTo(node.redis);
    const probe = clientOf(node.server, 0);
    await until(() => probe.ping().then((pong) => pong === "PONG", () => false), 10_000);
  }

  /** Ends every fault: paused servers go on, clocks read true time. */
  healAll(): void {
    for (const node of this.nodes) {
      if (node.paused) this.resume(node.index);
      if (node.clock && node.clock.offsetMs !== 0) node.clock.set(0);
    }
  }

  /** Kills every redis-server first, so no local server waits on a stopped one while closing. */
  async close(): Promise<void> {
    for (const node of this.nodes) if (node.paused) node.redis.signal("SIGCONT");
    await Promise.all([...this.#servers].map((server) => server.kill()));
    for (const node of this.nodes) {
      await node.server.close().catch(() => undefined);
      await node.proxy.close().catch(() => undefined);
      node.clock?.remove();
    }
  }
}

function clientOf(server: LocalUpstash, retries: number): Redis {
  return new Redis({ url: server.url, token: server.token, enableTelemetry: false, retry: { retries, backoff: () => 20 } });
}
