// fencelock: locks with fencing tokens over Redis, and a fenced store that refuses stale writes.
export { createLocks } from "./lock/locks.ts";
export type { Locks, LockState, HeldLease } from "./lock/locks.ts";
export { Lease } from "./lock/lease.ts";
export { createFencedStore } from "./fencing/store.ts";
export type { FencedStore, Fenced } from "./fencing/store.ts";
export type { ReleaseOutcome } from "./lock/lease.ts";
export type { RedisClient } from "./core/client.ts";
export type { LocksOptions, AcquireOptions, TryAcquireOptions, FencedStoreOptions } from "./core/options.ts";
export {
  LockError, LockTimeoutError, LockLostError, StaleFenceError, LockConfigError, LockUnavailableError,
  ClockBehindError,
} from "./core/errors.ts";
