import { Redis } from "@upstash/redis";
import {
  createLocks, LockTimeoutError, StaleFenceError, type FencedStore, type Lease, type Locks,
} from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Held, History, StoreWrite } from "./history.ts";

/** One address of the lock service: a local server in front of a switching proxy. */
export interface Endpoint {
  url: string;
  token: string;
  /** Label of the primary the address points at now ("none" while it points at nothing). */
  era(): string;
}

export interface WorkloadOptions {
  prefix: string;
  names: string[];
  clients: number;
  leaseMs: number;
  timeoutMs: number;
}

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/** A lock set on a client of its own, as a separate isolate would have; one attempt per request. */
function lockSet(endpoint: Endpoint, prefix: string, leaseMs: number, timeoutMs: number): Locks {
  const redis = new Redis({ url: endpoint.url, token: endpoint.token, retry: { retries: 0 }, enableTelemetry: false });
  return createLocks({ redis, prefix, leaseMs, timeoutMs });
}

/**
 * Clients taking locks through the public API and writing under each fence to a fenced store on a
 * Redis that no fault touches, so the store's verdicts can be trusted. Clients are spread over the
 * endpoints (two during a split brain); every lease, write and failed acquire goes to the history.
 */
export class Workload {
  readonly #history: History;
  readonly #store: FencedStore;
  readonly #options: WorkloadOptions;
  readonly #running: Promise<void>[] = [];
  readonly #lateWrites: Promise<void>[] = [];
  /** Names the clients leave alone for now. */
  readonly #spared = new Set<string>();
  #stopping = false;

  constructor(history: History, store: FencedStore, options: WorkloadOptions) {
    this.#history = history;
    this.#store = store;
    this.#options = options;
  }

  start(endpoints: Endpoint[]): void {
    for (let i = 0; i < this.#options.clients; i++) {
      const endpoint = endpoints[i % endpoints.length]!;
      this.#running.push(this.#client(`c${i}`, endpoint, i % 2 === 0));
    }
  }

  /** Keeps the clients off `names` until unspare(); an acquire already under way still lands. */
  spare(names: string[]): void {
    names.forEach((name) => this.#spared.add(name));
  }

  unspare(): void {
    this.#spared.clear();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all([...this.#running, ...this.#lateWrites]);
  }

  /** Settles once every lost holder so far has written. */
  async lateWritesDone(): Promise<void> {
    await Promise.all(this.#lateWrites);
  }

  /**
   * Lost holders: take `names` now, and write under their fences only once a holder that asked
   * later has had a write accepted (or `boundMs` passed), as holders paused across a failover
   * would. Resolves once their acquires have settled; their writes come later.
   */
  async straggle(endpoint: Endpoint, names: string[], leaseMs: number, boundMs: number): Promise<Held[]> {
    const got = names.map((name, i) => this.#acquireOnce(`lost${i}`, endpoint, name, leaseMs));
    const leases = await Promise.all(got);
    const held: Held[] = [];
    for (const [i, taken] of leases.entries()) {
      if (typeof taken === "string") {
        this.#history.note(`lost holder on ${names[i]} got no lease: ${taken}`);
        continue;
      }
      held.push(taken.held);
      this.#lateWrites.push(this.#writeLate(taken.held, taken.lease, boundMs));
    }
    return held;
  }

  async #client(client: string, endpoint: Endpoint, waits: boolean): Promise<void> {
    const { names, leaseMs, timeoutMs, prefix } = this.#options;
    const locks = lockSet(endpoint, prefix, leaseMs, timeoutMs);
    while (!this.#stopping) {
      const open = names.filter((name) => !this.#spared.has(name));
      const got = await this.#attempt(client, endpoint, locks, open[random(0, open.length - 1)]!, waits ? 300 : 0);
      if (typeof got === "string") continue;
      await this.#write(got.held);
      await sleep(random(0, 80));
      await this.#write(got.held);
      await got.lease.release().catch(() => undefined);
      this.#history.finish(got.held);
      await sleep(random(10, 40));
    }
  }

  /**
   * acquire() with waitMs, or tryAcquire(): the lease, or why there is none ("busy", or the error's
   * code). A failure (not busy) is recorded and followed by a pause.
   */
  async #attempt(client: string, endpoint: Endpoint, locks: Locks, name: string, waitMs: number) {
    const callStart = performance.now();
    const era = endpoint.era();
    this.#history.namesTried.add(name);
    try {
      const lease = waitMs > 0 ? await locks.acquire(name, { waitMs }) : await locks.tryAcquire(name);
      if (lease) return { lease, held: this.#history.receive(client, lease, era, callStart) };
    } catch (error) {
      if (!(error instanceof LockTimeoutError)) {
        const code = this.#history.fail(callStart, error);
        await sleep(150);
        return code;
      }
    }
    await sleep(20);
    return "busy";
  }

  async #acquireOnce(client: string, endpoint: Endpoint, name: string, leaseMs: number) {
    const locks = lockSet(endpoint, this.#options.prefix, leaseMs, this.#options.timeoutMs);
    return this.#attempt(client, endpoint, locks, name, 1_500);
  }

  async #writeLate(held: Held, lease: Lease, boundMs: number): Promise<void> {
    const deadline = performance.now() + boundMs;
    while (!this.#stopping && performance.now() < deadline && !this.#history.newerWriteAccepted(held, resourceOf(held))) {
      await sleep(50);
    }
    await this.#write(held);
    await lease.release().catch(() => undefined);
    this.#history.finish(held);
  }

  async #write(held: Held): Promise<void> {
    const write: StoreWrite = { held, resource: resourceOf(held), sentAt: performance.now(), repliedAt: 0, outcome: "unknown" };
    this.#history.writes.push(write);
    try {
      await this.#store.write(write.resource, { client: held.client, fence: held.fence }, held.fence);
      write.outcome = "accepted";
    } catch (error) {
      if (error instanceof StaleFenceError) write.outcome = "stale";
    } finally {
      write.repliedAt = performance.now();
    }
  }
}

function resourceOf(held: Held): string {
  return `r:${held.name}`;
}
