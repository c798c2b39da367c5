// Quorum mode on real parts: N redis-servers, each behind a switching proxy and a real local server,
// reached through @upstash/redis, with the faults one node can suffer.
import { Redis } from "@upstash/redis";
import { afterEach } from "vitest";
import { createLocks, type Locks, type LocksOptions } from "../../../src/index.ts";
import { lockKeys } from "../lock-keys.ts";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";
import { ClockOffsetFile } from "../faults/clock-shim.ts";
import { RedisProcess } from "../faults/redis-process.ts";
import { SwitchingProxy } from "../faults/switching-proxy.ts";
import { until } from "../until.ts";

export { clockShim, NO_COMPILER } from "../faults/clock-shim.ts";

export interface QuorumNode {
  readonly label: string;
  readonly client: Redis;
  readonly proxy: SwitchingProxy;
  readonly server: LocalUpstash;
  /** The LD_PRELOAD clock shim and its offset file, for a node started with a shifted clock. */
  readonly clock: { shim: string; file: ClockOffsetFile } | undefined;
}

export interface NodesOptions {
  /** Clock offsets (ms from true time) by node index; needs the shim (see clockShim()). */
  clocks?: Record<number, number>;
  shim?: string | null;
}

/** N independent nodes and the faults a test can put on each. */
export class QuorumNodes {
  readonly nodes: QuorumNode[] = [];
  readonly #servers: RedisProcess[] = [];
  readonly #clockFiles: ClockOffsetFile[] = [];

  static async start(count: number, options: NodesOptions = {}): Promise<QuorumNodes> {
    const rig = new QuorumNodes();
    try {
      // One at a time: starting many redis-servers at once on a busy 2-core box only slows each.
      for (let i = 0; i < count; i++) rig.nodes.push(await rig.#startNode(i, options));
    } catch (error) {
      await rig.close();
      throw error;
    }
    return rig;
  }

  async #startNode(i: number, options: NodesOptions): Promise<QuorumNode> {
    const offsetMs = options.clocks?.[i];
    if (offsetMs !== undefined && !options.shim) throw new Error("a shifted clock needs the clock shim");
    const clock = offsetMs !== undefined && options.shim ? { shim: options.shim, file: this.#clockFile(offsetMs) } : undefined;
    const label = `node${i}`;
    const redis = await this.#redis(label, clock);
    const proxy = await SwitchingProxy.start(redis);
    const server = await startLocalUpstash({ redisUrl: proxy.url }).catch(async (error: unknown) => {
      await proxy.close();
      throw error;
    });
    return { label, client: clientOf(server), proxy, server, clock };
  }

  #clockFile(offsetMs: number): ClockOffsetFile {
    const file = new ClockOffsetFile(offsetMs);
    this.#clockFiles.push(file);
    return file;
  }

  async #redis(label: string, clock: QuorumNode["clock"]): Promise<RedisProcess> {
    const server = await RedisProcess.start(label, clock ? { clock } : {});
    this.#servers.push(server);
    return server;
  }

  get clients(): Redis[] {
    return this.nodes.map((n) => n.client);
  }

  /** New clients for every node, as another process would have (their own requests, own order). */
  freshClients(): Redis[] {
    return this.nodes.map((n) => clientOf(n.server));
  }

  /** A quorum lock set over every node (by default through the shared clients); a silent node costs 1 s. */
  locks(prefix: string, options: Pick<LocksOptions, "leaseMs" | "timeoutMs" | "waitMs"> = {}, clients = this.clients): Locks {
    return createLocks({ redis: clients, prefix, leaseMs: 10_000, timeoutMs: 1_000, waitMs: 3_000, ...options });
  }

  node(i: number): QuorumNode {
    const node = this.nodes[i];
    if (!node) throw new Error(`no node ${i}`);
    return node;
  }

  /** The redis-server behind node i now. */
  redis(i: number): RedisProcess {
    const target = this.node(i).proxy.target;
    if (!target) throw new Error(`node ${i} has no redis-server behind it`);
    return target;
  }

  /** SIGSTOP: node i accepts requests and never answers them until cont(i). */
  stop(i: number): void {
    this.redis(i).signal("SIGSTOP");
  }

  /** SIGCONT: node i runs what it was sent while stopped. */
  cont(i: number): void {
    this.redis(i).signal("SIGCONT");
  }

  /** Points node i's address at nothing (its redis-server keeps its data): a network partition. */
  cut(i: number): void {
    this.node(i).proxy.switchTo(null);
  }

  /** Points node i's address back at `target`; resolves once node i answers again. */
  async heal(i: number, target: RedisProcess): Promise<void> {
    this.node(i).proxy.switchTo(target);
    await this.#answering(i);
  }

  /** The local server reconnects to Redis every 100 ms; until then node i answers 503. */
  async #answering(i: number): Promise<void> {
    const { client } = this.node(i);
    await until(() => client.ping().then((pong) => pong === "PONG", () => false), 10_000);
  }

  /** Shifts node i's clock (started under the shim) to `offsetMs` from true time, at once. */
  setClock(i: number, offsetMs: number): void {
    const { clock } = this.node(i);
    if (!clock) throw new Error(`node ${i} was not started under the clock shim`);
    clock.file.set(offsetMs);
  }

  /** Throws unless node i's TIME reads `offsetMs` from true time (within 500 ms: a busy box). */
  async checkClock(i: number, offsetMs: number): Promise<void> {
    const before = Date.now();
    const skewMs = (await this.redis(i).timeMs()) - (before + Date.now()) / 2;
    if (Math.abs(skewMs - offsetMs) > 500) {
      throw new Error(`node ${i}'s TIME is ${Math.round(skewMs)} ms from true time, not ${offsetMs}: the clock shim is not working`);
    }
  }

  /** SIGKILL, with nothing started in its place: node i's local server answers 503 at once. */
  async kill(i: number): Promise<void> {
    const target = this.redis(i);
    this.node(i).proxy.switchTo(null);
    await target.kill();
  }

  /**
   * Node i loses everything: its redis-server is killed (if still there) and an empty one, with the
   * same clock, takes its place behind the same address. Resolves once node i answers again.
   */
  async restartEmpty(i: number): Promise<void> {
    const node = this.node(i);
    const old = node.proxy.target;
    node.proxy.switchTo(null);
    await old?.kill();
    node.proxy.switchTo(await this.#redis(`${node.label}'`, node.clock));
    await this.#answering(i);
  }

  /** Milliseconds until key `fence` of lock `name` expires on node i (-2: no such key). */
  async fencePttl(i: number, prefix: string, name: string): Promise<number> {
    return this.redis(i).admin.pttl(lockKeys(prefix, name).fence);
  }

  /** The last fence node i remembers for lock `name` (0: none). */
  async lastFence(i: number, prefix: string, name: string): Promise<number> {
    return Number((await this.redis(i).admin.hget(lockKeys(prefix, name).fence, "last")) ?? 0);
  }

  /** Kills every redis-server first, so no local server waits on a stopped one while closing. */
  async close(): Promise<void> {
    await Promise.all(this.#servers.map((s) => s.kill()));
    for (const node of this.nodes) {
      await node.server.close().catch(() => undefined);
      await node.proxy.close().catch(() => undefined);
    }
    for (const file of this.#clockFiles) file.remove();
  }
}

/** One retry, soon: a lost reply is resent (as in production) without a silent node taking seconds. */
function clientOf(server: LocalUpstash): Redis {
  return new Redis({ url: server.url, token: server.token, enableTelemetry: false, retry: { retries: 1, backoff: () => 20 } });
}

/** Starts nodes for one test and closes them after it, whatever it left them in. */
export function nodesPerTest(): (count: number, options?: NodesOptions) => Promise<QuorumNodes> {
  const open: QuorumNodes[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((rig) => rig.close()));
  });
  return async (count, options) => {
    const rig = await QuorumNodes.start(count, options);
    open.push(rig);
    return rig;
  };
}
