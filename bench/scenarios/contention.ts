import type { Library } from "../adapters/types.ts";
import { commandDelta, type CommandCounts, type RedisStats } from "../harness/commandstats.ts";
import { abortAt, now, sleep } from "../harness/timing.ts";
import { asClient, withClients, type Client } from "./clients.ts";

/** One critical section as its client saw it (performance.now() times, one process). */
export interface Section {
  client: number;
  waitStart: number;
  acquiredAt: number;
  releaseStart: number;
  releasedAt: number;
  /** Requests the client sent inside this acquire() call. */
  requests: number;
  /** Requests the client sent inside release(). */
  releaseRequests: number;
}

/** A wait still going when the window closed (the library took the AbortSignal). */
export interface Censored {
  client: number;
  waitStart: number;
  abortedAt: number;
  requests: number;
}

/**
 * When a client that released competes again: "immediate" (at once, so it often wins again
 * before any waiter wakes), or "after-handoff" (once another client has taken the lock, or
 * after REJOIN_CAP_MS, and then REJOIN_JITTER_MS at random), so it never takes the lock straight back.
 */
export type Rejoin = "immediate" | "after-handoff";

const REJOIN_CAP_MS = 1_000;
/**
 * In "after-handoff", a client starts, and rejoins after each handoff, a random 0–100 ms later,
 * as a real waiter arrives at any moment. Rejoining right at the handoff put every waiter of a
 * fixed-interval poller (@upstash/lock retries every 100 ms) in step: all tried during one hold,
 * all slept the full interval, and its handoff gap came out as that interval.
 */
export const REJOIN_JITTER_MS = 100;

export interface ContentionPlan {
  clients: number;
  durationMs: number;
  holdMs: number;
  rejoin: Rejoin;
  /** The lock name a client competes for next. */
  pickName(client: number): string;
}

export interface ContentionRun {
  plan: Omit<ContentionPlan, "pickName">;
  start: number;
  end: number;
  sections: Section[];
  censored: Censored[];
  /** Retry windows that ran out inside the library (summed over clients). */
  exhausted: number;
  /** SSE subscription streams opened. */
  streams: number;
  commands: CommandCounts;
}

/**
 * `plan.clients` clients loop for `plan.durationMs`: acquire (timed), hold, release, and
 * compete again at once. At the end the clients still waiting are aborted where the library
 * takes a signal; the others finish their wait, hold and release (recorded, but sections
 * acquired after the window are left out of the throughput).
 */
export async function runContention(library: Library, plan: ContentionPlan, stats: Pick<RedisStats, "commands">): Promise<ContentionRun> {
  return withClients(library, plan.clients, async (clients) => {
    const before = await stats.commands();
    const streamsBefore = clients.reduce((sum, c) => sum + c.counter.streams, 0);
    const start = now();
    const end = start + plan.durationMs;
    const window = abortAt(end);
    const log: Log = { sections: [], censored: [], handoffs: new Handoffs() };
    const { sections, censored } = log;
    try {
      await Promise.all(clients.map((client) => asClient(client, () => contend(client, plan, end, window.signal, log))));
    } finally {
      window.dispose();
    }
    return {
      plan: { clients: plan.clients, durationMs: plan.durationMs, holdMs: plan.holdMs, rejoin: plan.rejoin }, start, end, sections, censored,
      exhausted: clients.reduce((sum, c) => sum + c.adapter.exhausted, 0),
      streams: clients.reduce((sum, c) => sum + c.counter.streams, 0) - streamsBefore,
      commands: commandDelta(before, await stats.commands()),
    };
  });
}

interface Log {
  sections: Section[];
  censored: Censored[];
  handoffs: Handoffs;
}

/** Lets a client that released wait until another client has taken the lock. */
class Handoffs {
  readonly #released = new Set<{ client: number; wake: () => void }>();

  acquired(client: number): void {
    for (const entry of this.#released) if (entry.client !== client) entry.wake();
  }

  /** Resolves when another client acquires, after `capMs`, or at `end`, whichever is first. */
  otherTakes(client: number, capMs: number, end: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        client,
        wake: () => {
          clearTimeout(timer);
          this.#released.delete(entry);
          resolve();
        },
      };
      const timer = setTimeout(entry.wake, Math.max(0, Math.min(capMs, end - now())));
      this.#released.add(entry);
    });
  }
}

async function contend(client: Client, plan: ContentionPlan, end: number, signal: AbortSignal, log: Log): Promise<void> {
  // Alone, a client has nobody to fall out of step with: the jitter would set its pace.
  const jitter = () => (plan.rejoin === "after-handoff" && plan.clients > 1 ? sleep(Math.random() * REJOIN_JITTER_MS) : undefined);
  await jitter();
  while (now() < end) {
    const waitStart = now();
    const before = client.counter.requests;
    const held = await acquireUnlessAborted(client, plan.pickName(client.index), signal);
    const requests = client.counter.requests - before;
    if (!held) {
      log.censored.push({ client: client.index, waitStart, abortedAt: now(), requests });
      return;
    }
    const acquiredAt = now();
    log.handoffs.acquired(client.index);
    if (plan.holdMs > 0) await sleep(plan.holdMs);
    const releaseStart = now();
    // Registered before release: the next holder may take the lock before release() resolves.
    const rejoin = plan.rejoin === "after-handoff" && plan.clients > 1 ? log.handoffs.otherTakes(client.index, REJOIN_CAP_MS, end) : undefined;
    const beforeRelease = client.counter.requests;
    await client.adapter.release(held.handle);
    const releaseRequests = client.counter.requests - beforeRelease;
    log.sections.push({ client: client.index, waitStart, acquiredAt, releaseStart, releasedAt: now(), requests, releaseRequests });
    await rejoin;
    await jitter();
  }
}

async function acquireUnlessAborted(client: Client, name: string, signal: AbortSignal): Promise<{ handle: unknown } | undefined> {
  try {
    return { handle: await client.adapter.acquire(name, signal) };
  } catch (error) {
    if (signal.aborted) return undefined;
    throw error;
  }
}
