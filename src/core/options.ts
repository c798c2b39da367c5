// The options of createLocks, acquire, tryAcquire and createFencedStore: checked once, defaults filled in.
import * as z from "zod/mini";
import { LockConfigError } from "./errors.ts";
import type { RedisClient } from "./client.ts";

// zod/mini ships no message locale, so every check names its own fix.
export const ms = (min: number, max: number) =>
  z.number("expected a number of milliseconds").check(
    z.int("must be a whole number of milliseconds"),
    z.minimum(min, `must be at least ${min} ms`),
    z.maximum(max, `must be at most ${max} ms`),
  );

// The limits of leaseMs and waitMs, and the tests of the other options: zod and the quick path
// below both read them, so the two cannot drift apart.
const LEASE_MS = [100, 3_600_000] as const;
const WAIT_MS = [0, 600_000] as const;
const OWNER = /^[0-9a-f]{32}$/;
const WAKES = ["poll", "push"] as const;
const isFunction = (v: unknown) => typeof v === "function";
// By shape, as isAbortSignal (not imported, for the core's bytes): a Request's signal in
// Vercel's Edge Runtime is from another realm.
const isSignal = (v: unknown) =>
  typeof (v as AbortSignal | undefined)?.throwIfAborted == "function" && typeof (v as AbortSignal).addEventListener == "function" &&
  typeof (v as AbortSignal).removeEventListener == "function";

const CLIENT_EXAMPLE = "a Redis client such as new Redis({ url, token }) from @upstash/redis";

/** An ioredis or node-redis client passed as it is: its methods take other arguments than @upstash/redis's. */
const unwrappedTcp = (v: unknown) =>
  typeof (v as { duplicate?: unknown } | null)?.duplicate === "function" && ("status" in (v as object) || "isOpen" in (v as object));

const isClient = (v: unknown): v is RedisClient =>
  typeof (v as RedisClient | undefined)?.evalsha === "function" && typeof (v as RedisClient | undefined)?.eval === "function" && !unwrappedTcp(v);

const clientIssue = (v: unknown, expected: string) =>
  unwrappedTcp(v)
    ? typeof (v as { evalSha?: unknown }).evalSha === "function"
      ? "a node-redis client goes through its adapter: fromNodeRedis(client) from fencelock/node-redis"
      : "an ioredis client goes through its adapter: fromIoredis(client) from fencelock/ioredis"
    : expected;

// Only the fenced store's: a lock set takes redisClients.
const redisClient = z.custom<RedisClient>(isClient, {
  error: (issue) => Array.isArray(issue.input) ? "a fenced store keeps its data on one Redis: pass one client, not a quorum's" : clientIssue(issue.input, `expected ${CLIENT_EXAMPLE}`),
});

/**
 * One Redis client, or independent ones for quorum mode (three or more; odd is best). Checked by
 * hand rather than with z.union and z.array, which would add about 1 KiB to a bundle without zod.
 */
const redisClients = z.custom<RedisClient | RedisClient[]>(
  // Spread, as every() skips an array's holes.
  (v) => isClient(v) || (Array.isArray(v) && [...v].every(isClient)),
  { error: (issue) => clientIssue(Array.isArray(issue.input) ? issue.input.find(unwrappedTcp) : issue.input, `expected ${CLIENT_EXAMPLE}, or an array of 3 or more for quorum mode`) },
).check(
  z.refine((v) => !Array.isArray(v) || v.length >= 3, "quorum mode needs at least 3 independent Redis clients; for one Redis, pass its client alone"),
  // Two clients of one database are one node: @upstash/redis' by its URL (none: checked per call).
  z.refine((v) => !Array.isArray(v) || new Set(v.map((c) => (c as { client?: { baseUrl?: unknown } }).client?.baseUrl || c)).size === v.length,
    "a Redis was given twice (the same client, or two with one URL): each must be a separate Redis"),
);

const prefix = z.string("expected a string").check(
  z.regex(/^[A-Za-z0-9_.:-]{1,64}$/, "use 1-64 characters from A-Z a-z 0-9 _ . : -"),
);

const common = {
  redis: redisClient,
  /** Namespace for every key (default "fencelock"): lock sets with different prefixes never meet. */
  prefix: z._default(prefix, "fencelock"),
  /** Budget for one Redis request, client retries included (default 3 s), to each node in quorum mode; past it: LockUnavailableError. */
  timeoutMs: z._default(ms(50, 60_000), 3_000),
};

export const locksOptionsSchema = z.strictObject({
  ...common,
  /** One Redis client, or an array of independent ones for quorum mode. */
  redis: redisClients,
  /** Lease length (default 10 s). Short leases bound how long a crashed holder blocks others. */
  leaseMs: z._default(ms(...LEASE_MS), 10_000),
  /** How long acquire() waits for a busy lock (default 5 s). */
  waitMs: z._default(ms(...WAIT_MS), 5_000),
  /**
   * Redis Cluster: the hash tag of a lock's keys, to put the lock in the slot of your keys tagged
   * `{tag}` (for a script of yours that reads both). Keys become `prefix:{tag}:name:…`; by default `prefix:{name}:…`.
   */
  hashTag: z.optional(z.custom<(name: string) => string>(isFunction, "expected a function from a lock name to its hash tag, such as (name) => name.split(\"/\")[0]")),
}, "expected an options object");

export const storeOptionsSchema = z.strictObject({
  ...common,
  /**
   * Expire a resource this long after its last claim or write; by default data is kept. A fence
   * minted more than ttlMs less 1 s ago is then refused (a fence may run up to 1 s ahead of the
   * clock): make it at least 1 s longer than any lease works on a resource.
   */
  ttlMs: z.optional(ms(2_000, 10 * 365 * 86_400_000)),
}, "expected an options object");

export type FencedStoreOptions = z.input<typeof storeOptionsSchema>;

/**
 * store.read()'s options: strict, so a misspelled `fence` cannot turn a claim into a plain read.
 * The fence itself is checked as claim() and write() check theirs.
 */
export const readOptionsSchema = z.strictObject({ fence: z.optional(z.unknown()) }, "expected an options object");

export type LocksOptions = z.input<typeof locksOptionsSchema>;

/** An owner token, as acquire({ owner }) and resume() take it. */
export const ownerToken = z.string("expected lease.owner: 32 hex characters").check(
  z.regex(OWNER, "expected lease.owner: 32 hex characters"),
);

/** What tryAcquire() takes; acquire() takes these too. */
const attemptOptions = {
  /** This lease's length (default: the lock set's leaseMs). */
  leaseMs: z.optional(ms(...LEASE_MS)),
  /** An owner token of a lease you hold: joins it reentrantly (same fence, one more hold). */
  owner: z.optional(ownerToken),
  signal: z.optional(z.custom<AbortSignal>(isSignal, "expected an AbortSignal")),
  /**
   * Where a runtime stops a request's work once it has answered (Workers: `ctx.waitUntil`, bound):
   * the request that gives up a place in line (or a hold never received) is handed to it, to reach Redis.
   */
  waitUntil: z.optional(z.custom<(work: Promise<unknown>) => void>(isFunction, "expected a function such as (p) => ctx.waitUntil(p)")),
};

export const tryAcquireOptionsSchema = z.strictObject(attemptOptions, "expected an options object");

export type TryAcquireOptions = z.input<typeof tryAcquireOptionsSchema>;

export const acquireOptionsSchema = z.strictObject({
  /** How long to wait for a busy lock (default: the lock set's waitMs). */
  waitMs: z.optional(ms(...WAIT_MS)),
  ...attemptOptions,
  /**
   * "push" (default on one Redis) waits on the lock set's SUBSCRIBE stream, and the holder's release
   * hands the lock straight to the first push waiter in line; "poll" backs off and looks again.
   */
  wake: z.optional(z.enum(WAKES, 'expected "poll" or "push"')),
}, "expected an options object");

export type AcquireOptions = z.input<typeof acquireOptionsSchema>;

const within = ([min, max]: readonly [number, number]) => (v: unknown) => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

/** What zod would pass of each of acquire()'s options as it is, tested as its schema tests it. */
const quickChecks: Record<string, (v: unknown) => boolean> = {
  waitMs: within(WAIT_MS),
  leaseMs: within(LEASE_MS),
  owner: (v) => typeof v == "string" && OWNER.test(v),
  signal: isSignal,
  waitUntil: isFunction,
  wake: (v) => WAKES.includes(v as "poll"),
};

/**
 * acquire()'s and tryAcquire()'s options, parsed once per call: no options, or valid ones of the
 * schema's, pass without zod's ~1 KB of objects; anything else goes to zod, whose errors stay the ones reported.
 */
export function parseAttemptOptions<S extends z.ZodMiniObject>(schema: S, input: unknown, what: string): z.output<S> {
  return (quickly(schema.shape, input) as z.output<S> | undefined) ?? parseOptions(schema, input, what);
}

/** A copy of the options, or undefined where zod must look: keys are read as zod reads them, unknown ones by for-in. */
function quickly(shape: object, input: unknown): object | undefined {
  if (input == null) return {};
  if (typeof input != "object" || Array.isArray(input)) return undefined;
  for (const key in input) if (!Object.hasOwn(shape, key)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key in shape) {
    const value = (input as Record<string, unknown>)[key];
    if (value !== undefined && !quickChecks[key]?.(value)) return undefined;
    out[key] = value;
  }
  return out;
}

/** Parses untrusted input once; the caller's object is never mutated. */
export function parseOptions<S extends z.ZodMiniType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = z.safeParse(schema, input ?? {});
  if (result.success) return result.data;
  throw new LockConfigError(what, result.error.issues.map(describeIssue));
}

/** One zod issue as a line of a config error: which option, and what is wrong with it. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") {
    return `unknown option ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
  }
  return issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}
