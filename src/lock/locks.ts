// createLocks: a lock set over one Redis or a quorum (acquire, tryAcquire, withLock, resume, inspect).
import { acquireLoop } from "./acquire-loop.ts";
import type { HeldLease, LockState } from "../core/backend.ts";
import { LockConfigError, LockTimeoutError } from "../core/errors.ts";
import { checkFence } from "../core/fence.ts";
import { checkName, keyBase } from "../core/keys.ts";
import { Lease } from "./lease.ts";
import {
  acquireOptionsSchema, locksOptionsSchema, ownerToken, parseAttemptOptions, parseOptions, tryAcquireOptionsSchema,
  type AcquireOptions, type LocksOptions, type TryAcquireOptions,
} from "../core/options.ts";
import { quorum } from "../quorum/quorum.ts";
import { singleNode } from "./single-node.ts";
import { wakeChannels } from "../waiting/wake-channels.ts";

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
 * Creates a lock set over one Redis, or over a quorum of independent ones (`redis: [a, b, c]`).
 *
 * @example
 * const locks = createLocks({ redis: Redis.fromEnv(), prefix: "app", leaseMs: 10_000 });
 * await locks.withLock("order:42", async (lease) => {
 *   await chargeCard(order, { fence: lease.fence, signal: lease.signal });
 * });
 */
export function createLocks(options: LocksOptions): Locks {
  const config = parseOptions(locksOptionsSchema, options, "createLocks options");
  const { redis, timeoutMs } = config;
  const keysOf = keyBase(config.prefix, config.hashTag);
  const backend = Array.isArray(redis)
    ? quorum(redis.map((client) => ({ redis: client, keyBase: keysOf, timeoutMs })))
    : singleNode({ redis, keyBase: keysOf, timeoutMs });
  const warn = once((message) => console.warn(`fencelock: ${message}`));
  const channels = Array.isArray(redis) ? undefined : wakeChannels(redis, warn);
  const channelFor = channels && ((name: string) => channels(`${keysOf(name)}:lock`));
  const acquireWithin = acquireLoop({ leaseMs: config.leaseMs, channelFor, warn }, backend);

  /** A usable lock name, whose hash tag (if the lock set has hashTag) is usable too. */
  function checkLockName(name: string): string {
    keysOf(checkName(name));
    return name;
  }

  async function acquire(name: string, options?: AcquireOptions): Promise<Lease> {
    checkLockName(name);
    const opts = parseAttemptOptions(acquireOptionsSchema, options, "acquire options");
    const waitMs = opts.waitMs ?? config.waitMs;
    const outcome = await acquireWithin(name, opts, waitMs);
    if (outcome instanceof Lease) return outcome;
    throw new LockTimeoutError(name, waitMs, outcome.busyForMs);
  }

  async function tryAcquire(name: string, options?: TryAcquireOptions): Promise<Lease | null> {
    checkLockName(name);
    const outcome = await acquireWithin(name, parseAttemptOptions(tryAcquireOptionsSchema, options, "tryAcquire options"), 0);
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
    checkLockName(name);
    checkFence(fence, "lease to resume");
    return new Lease({ name, owner, fence, leaseMs: config.leaseMs, validUntil: undefined }, backend);
  }

  async function inspect(name: string): Promise<LockState> {
    return backend.inspect(checkLockName(name));
  }

  return { acquire, tryAcquire, withLock, resume, inspect };
}

/** `say`, the first time only: a lock set reports a degraded mode once, not on every wait. */
function once(say: (message: string) => void): (message: string) => void {
  let said = false;
  return (message) => {
    if (!said) say(message);
    said = true;
  };
}
