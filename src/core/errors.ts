// The errors fencelock throws: each with a stable `code`, typed fields, and a message that says what to do.
/** Base class of every error fencelock throws; `code` is stable, the message is for people. */
export class LockError extends Error {
  override readonly name: string = "LockError";
  declare readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** `acquire` waited `waitMs` and the lock stayed busy. */
export class LockTimeoutError extends LockError {
  override readonly name = "LockTimeoutError";
  declare readonly lockName: string;
  declare readonly waitedMs: number;
  /** The holder's remaining TTL at the last attempt: the earliest the lock frees up unless released. 0: free, but promised to a caller ahead in line. */
  declare readonly retryAfterMs: number;
  constructor(lockName: string, waitedMs: number, retryAfterMs: number) {
    super(
      "LOCK_TIMEOUT",
      `Lock "${lockName}" stayed busy for ${waitedMs} ms. Raise waitMs, or use tryAcquire() to fail fast.`,
    );
    this.lockName = lockName;
    this.waitedMs = waitedMs;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The lease expired or passed to someone else; work done under it must stop. */
export class LockLostError extends LockError {
  override readonly name = "LockLostError";
  declare readonly lockName: string;
  declare readonly fence: number;
  constructor(lockName: string, fence: number, why: string) {
    super("LOCK_LOST", `Lease on "${lockName}" (fence ${fence}) is no longer held: ${why}.`);
    this.lockName = lockName;
    this.fence = fence;
  }
}

/**
 * A write, claim or fenced read carried a fence lower than one the storage has already seen
 * (`highestFence`), or, for a fenced store with ttlMs whose record expired, minted before it
 * could have expired.
 */
export class StaleFenceError extends LockError {
  override readonly name = "StaleFenceError";
  /** Where it was refused: the store's resource name, the SQL row (`table/key…`) or the URL. */
  declare readonly resource: string;
  declare readonly fence: number;
  declare readonly highestFence: number;
  constructor(resource: string, fence: number, highestFence: number) {
    super(
      "STALE_FENCE",
      `Fence ${fence} refused at "${resource}": fences below ${highestFence} are stale here.`,
    );
    this.resource = resource;
    this.fence = fence;
    this.highestFence = highestFence;
  }
}

/** An option, lock name, owner or fence was invalid; nothing was changed in Redis. */
export class LockConfigError extends LockError {
  override readonly name = "LockConfigError";
  declare readonly issues: readonly string[];
  constructor(what: string, issues: readonly string[]) {
    super("LOCK_CONFIG", `Invalid ${what}: ${issues.join("; ")}`);
    this.issues = issues;
  }
}

/**
 * Redis could not be reached, timed out, or refused the request. Unlike a busy lock,
 * the outcome is unknown: an acquire may have landed and will then lapse on its own.
 */
export class LockUnavailableError extends LockError {
  override readonly name: string = "LockUnavailableError";
  constructor(message: string, code = "LOCK_UNAVAILABLE") {
    super(code, message);
  }
}

/**
 * The lock is free, but Redis's clock is behind its last fence (a failover to a server whose clock
 * lags, or a clock stepped back). No fence is minted more than 1 s ahead of the clock, so that a
 * later failover cannot mint it again: retry after `retryAfterMs`.
 */
export class ClockBehindError extends LockUnavailableError {
  override readonly name = "ClockBehindError";
  declare readonly lockName: string;
  declare readonly retryAfterMs: number;
  constructor(lockName: string, retryAfterMs: number) {
    super(
      `Lock "${lockName}" is free, but the Redis clock is behind its last fence; retry in ${retryAfterMs} ms.`,
      "CLOCK_BEHIND",
    );
    this.lockName = lockName;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Quorum mode: fewer than a majority of the nodes answered, so whether the lock is free, held or
 * taken is unknown. Unlike a busy lock (a majority answered, and too few granted), retrying later
 * or restoring the nodes helps; `failures` says why each silent node failed.
 */
export class QuorumUnavailableError extends LockUnavailableError {
  override readonly name = "QuorumUnavailableError";
  declare readonly nodes: number;
  declare readonly answered: number;
  declare readonly granted: number;
  declare readonly failures: readonly string[];
  constructor(what: string, nodes: number, answered: number, granted: number, failures: readonly string[]) {
    super(
      `${what}: no majority agreed (${answered} of ${nodes} Redis nodes answered, ${granted} said yes; ` +
        `a majority is ${Math.floor(nodes / 2) + 1}). ${failures.join(" ")}`,
      "QUORUM_UNAVAILABLE",
    );
    this.nodes = nodes;
    this.answered = answered;
    this.granted = granted;
    this.failures = failures;
  }
}
