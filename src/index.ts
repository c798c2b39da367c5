export { createLocks } from "./locks.ts";
export type { Locks, LockState, HeldLease } from "./locks.ts";
export { Lease } from "./lease.ts";
export { createFencedStore } from "./fenced-store.ts";
export type { FencedStore, Fenced } from "./fenced-store.ts";
export type { ReleaseOutcome } from "./lease.ts";
export type { RedisClient } from "./redis.ts";
export type { LocksOptions, AcquireOptions, TryAcquireOptions, FencedStoreOptions } from "./options.ts";
export {
  LockError, LockTimeoutError, LockLostError, StaleFenceError, LockConfigError, LockUnavailableError,
  ClockBehindError,
} from "./errors.ts";
