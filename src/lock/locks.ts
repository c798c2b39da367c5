import { attemptAcquire, leaseBackend, type Run } from "./attempt.ts";
import { ClockBehindError, LockConfigError, LockTimeoutError, LockUnavailableError } from "../core/errors.ts";
import { checkFence } from "../core/fence.ts";
import { checkName, lockKeys, newToken } from "../core/keys.ts";
import { Lease, driftMs } from "./lease.ts";
import {
  acquireOptionsSchema, locksOptionsSchema, ownerToken, parseOptions, tryAcquireOptionsSchema,
  type AcquireOptions, type LocksOptions, type TryAcquireOptions,
} from "../core/options.ts";
import { integers, RETRY_WINDOW_MS, runScript } from "../redis/run-script.ts";
import * as scripts from "../redis/scripts.gen.ts";
import { QUEUE_ALIVE_MS, sleep, type Busy } from "../waiting/backoff.ts";
import { pollWaiter, pushWaiter } from "../waiting/push.ts";

/** A lock's state as anyone may see it; the owner is never revealed. */
export interface LockState {
  held: boolean;
  /** The holder's fence, or the last one minted when free (null if none is remembered). */
  fence: number | null;
  remainingMs: number;
  holds: number;
  /** Callers of acquire() waiting in line. */
  waiters: number;
}

export interface HeldLease {
  name: string;
  owner: string;
  fence: number;
}

export interface Locks {
  /** Waits up to `waitMs` for the lock; throws LockTimeoutError if it stays busy. */
  acquire(name: string, options?: AcquireOptions): Promise<Lease>;
  /** One attempt: the lease, or null when the lock is busy. */
  tryAcquire(name: string, options?: TryAcquireOptions): Promise<Lease | null>;
  /**
   * Runs `fn` under the lock and releases it afterwards, whether `fn` returned or threw. Resolves
   * with `fn`'s result even if the lease lapsed meanwhile (the fence decides what counted; watch
   * `lease.signal` to stop early): an error then would invite a retry of work already done.
   */
  withLock<T>(name: string, fn: (lease: Lease) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  /**
   * Continues a lease taken in another invocation; call heartbeat() to confirm it. It is the
   * same hold, not one more: release the resumed lease or the original, never both. Only name,
   * owner and fence are read; heartbeats extend by this lock set's leaseMs.
   */
  resume(held: HeldLease): Lease;
  inspect(name: string): Promise<LockState>;
}

/**
 * Creates a lock set over one Redis.
 *
 * @example
 * const locks = createLocks({ redis: Redis.fromEnv(), prefix: "app", leaseMs: 10_000 });
 * await locks.withLock("order:42", async (lease) => {
 *   await chargeCard(order, { fence: lease.fence, signal: lease.signal });
 * });
 */
export function createLocks(options: LocksOptions): Locks {
  const config = parseOptions(locksOptionsSchema, options, "createLocks options");
  const run: Run = async (script, name, args, owner, fence) =>
    integers(
      await runScript(config.redis, script, Object.values(lockKeys(config.prefix, name, fence)), args, {
        timeoutMs: config.timeoutMs,
        secrets: [owner],
      }),
      script,
    );
  const backend = leaseBackend(run);
  const attempt = attemptAcquire(run, backend);

  async function acquireWithin(name: string, opts: AcquireOptions, waitMs: number): Promise<Lease | Busy> {
    const leaseMs = opts.leaseMs ?? config.leaseMs;
    const owner = opts.owner ?? newToken();
    // The same request id on every attempt: an attempt that landed unseen is not counted twice.
    const requestId = newToken();
    const deadline = performance.now() + waitMs;
    // Only a caller that will wait takes a place in line.
    const queueMs = waitMs > 0 ? QUEUE_ALIVE_MS : 0;
    const push = opts.wake === "push";
    // A push waiter's ticket carries what release.lua needs to take the lock on its behalf.
    const ticket = push ? `${requestId}.${owner}.${leaseMs}.${leaseMs + RETRY_WINDOW_MS}` : requestId;
    const waiter = push ? pushWaiter(config.redis, lockKeys(config.prefix, name).lock, requestId, owner) : pollWaiter;
    // True while Redis may hold a place in line for this call, or a hold it has not received.
    let queued = false;
    // A lease that arrives after an abort is given back, and the abort wins.
    const deliver = async (lease: Lease) => {
      queued = false;
      if (opts.signal?.aborted) {
        await lease.release().catch(() => undefined);
        opts.signal.throwIfAborted();
      }
      return lease;
    };
    try {
      for (let tries = 0; ; tries++) {
        opts.signal?.throwIfAborted();
        const sentAt = performance.now();
        // Until its reply arrives, an attempt may have done either.
        const wasQueued: boolean = queued;
        queued = true;
        const outcome = await attempt(name, owner, ticket, leaseMs, queueMs);
        if (outcome instanceof Lease) return await deliver(outcome);
        // Queued, or holding a hold whose reply came too late (busyForMs -1).
        queued = wasQueued || outcome.position >= 0 || outcome.busyForMs < 0;
        // An abort while the attempt was out wins over what it found, as over a lease it got.
        opts.signal?.throwIfAborted();
        const budgetMs = deadline - performance.now();
        const { clockBehindMs = 0 } = outcome;
        if (budgetMs <= 0) {
          if (clockBehindMs > 0) throw new ClockBehindError(name, clockBehindMs);
          // The last attempt found the lock free, and its reply too late to use: "busy" would mislead.
          if (outcome.busyForMs < 0) throw new LockUnavailableError("Redis took most of leaseMs to answer; raise leaseMs.");
          return outcome;
        }
        // No release can hand the lock over before the clock catches up; the next attempt keeps the place in line.
        const fence = clockBehindMs > 0
          ? await sleep(Math.min(clockBehindMs, QUEUE_ALIVE_MS / 2, budgetMs), opts.signal)
          : await waiter.pause(tries, outcome, budgetMs, opts.signal);
        // Handed over after this attempt (a fence minted before it has lapsed, or the attempt would
        // have found the lock held), so it lasts leaseMs from sentAt at least; with too little of it
        // left, the next attempt finds it held and learns its true TTL.
        const lease = fence && fence > outcome.newestFence &&
          new Lease({ name, owner, fence, leaseMs, validUntil: sentAt + leaseMs - driftMs(leaseMs) }, backend);
        if (lease && lease.remainingMs() >= leaseMs / 10) return await deliver(lease);
      }
    } catch (error) {
      // An abort wins over an attempt that failed while it was out, too.
      opts.signal?.throwIfAborted();
      throw error;
    } finally {
      // Out of time or failed: gives up the place in line at once rather than hold a free lock back
      // until it expires, and a hold taken for this call that it never received. Not awaited (the
      // caller is leaving, aborted or failed, and must not wait on Redis) but handed to waitUntil.
      if (queued) {
        const left = run(scripts.leave, name, [ticket], "").catch(() => undefined);
        opts.waitUntil?.(left);
      }
      // Not awaited: the caller has its lease or error, whatever closing the stream takes.
      waiter.close?.().catch(() => undefined);
    }
  }

  async function acquire(name: string, options?: AcquireOptions): Promise<Lease> {
    checkName(name);
    const opts = parseOptions(acquireOptionsSchema, options, "acquire options");
    const waitMs = opts.waitMs ?? config.waitMs;
    const outcome = await acquireWithin(name, opts, waitMs);
    if (outcome instanceof Lease) return outcome;
    throw new LockTimeoutError(name, waitMs, outcome.busyForMs);
  }

  async function tryAcquire(name: string, options?: TryAcquireOptions): Promise<Lease | null> {
    checkName(name);
    const outcome = await acquireWithin(name, parseOptions(tryAcquireOptionsSchema, options, "tryAcquire options"), 0);
    return outcome instanceof Lease ? outcome : null;
  }

  async function withLock<T>(name: string, fn: (lease: Lease) => Promise<T> | T, options?: AcquireOptions) {
    // Before the lock is taken: a fence minted for a call that cannot run is one wasted.
    if (typeof fn !== "function") throw new LockConfigError("withLock", ["expected a function to run under the lock"]);
    const lease = await acquire(name, options);
    try {
      return await fn(lease);
    } finally {
      // A failed release must not replace fn's outcome; the lease lapses by its TTL anyway.
      await lease.release().catch(() => undefined);
    }
  }

  function resume(held: HeldLease): Lease {
    const { name, owner, fence } = held ?? {};
    // The owner first: a lease passed as its JSON text, unparsed, is told it is no lease.
    parseOptions(ownerToken, owner, "lease to resume");
    checkName(name);
    checkFence(fence, "lease to resume");
    return new Lease({ name, owner, fence, leaseMs: config.leaseMs, validUntil: undefined }, backend);
  }

  async function inspect(name: string): Promise<LockState> {
    checkName(name);
    const [held, fence, ttl, holds, waiters] = await run(scripts.inspect, name, [], "");
    return { held: held === 1, fence: fence > 0 ? fence : null, remainingMs: Math.max(0, ttl), holds, waiters };
  }

  return { acquire, tryAcquire, withLock, resume, inspect };
}
