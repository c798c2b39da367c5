// fencelock: locks with fencing tokens over Redis, and a fenced store that refuses stale writes.
export { createLocks } from "./lock/locks.ts";
export type { Locks } from "./lock/locks.ts";
export type { LockState, HeldLease, ReleaseOutcome } from "./core/backend.ts";
export { Lease } from "./lock/lease.ts";
export { createFencedStore } from "./fencing/store.ts";
export type { FencedStore, Fenced } from "./fencing/store.ts";
export type { RedisClient } from "./core/client.ts";
export type { LocksOptions, AcquireOptions, TryAcquireOptions, FencedStoreOptions } from "./core/options.ts";
export {
  LockError, LockTimeoutError, LockLostError, StaleFenceError, LockConfigError, LockUnavailableError,
  ClockBehindError, QuorumUnavailableError,
} from "./core/errors.ts";
