// lockGuard (fencelock/hono): Hono middleware that lets one request at a time through, per lock name.
import type { Context, Env, MiddlewareHandler } from "hono";
import { enterGuard, guardSettings, leaveGuard, leaveWhenSent, lockSetOf, refusalResponse, type Refusal } from "./guard.ts";
import { Lease } from "../lock/lease.ts";
import type { Locks } from "../lock/locks.ts";

/** What lockGuard() puts on the context: `c.get("lease")`. */
export type LockVariables = { lease: Lease };

/** The app's env `E` (its Bindings and Variables), with what lockGuard() adds. */
export type LockGuardEnv<E extends Env> = E & { Variables: LockVariables };

/** `E`: the app's env, so that the callbacks see its typed `c.env` and variables. */
export interface LockGuardOptions<E extends Env = Env> {
  /** The lock set, or a function of the context (on Workers, Redis credentials arrive in c.env). */
  locks: Locks | ((c: Context<LockGuardEnv<E>>) => Locks);
  /**
   * The lock a request needs, e.g. `(c) => \`order:${c.req.param("id")}\``. A name the request
   * made unusable ("" from `?job=`, too long) is answered 400; undefined is a mistake in the app
   * (500): for a name that a request may leave out, return `c.req.query("job") ?? ""`.
   */
  name: (c: Context<LockGuardEnv<E>>) => string | undefined;
  /** How long to wait for a busy lock before answering 423 (default 0: answer at once). */
  waitMs?: number;
  /** Lease length for this route; the lock set's default otherwise. */
  leaseMs?: number;
  /**
   * "push" (default on one Redis): a waiting request listens on a SUBSCRIBE stream and the holder's
   * release hands it the lock (a few ms rather than a poll's tens); "poll" backs off and looks again.
   */
  wake?: "poll" | "push";
  /** "await" (default) releases before the body's last byte goes out; "waitUntil" releases in the background. */
  release?: "await" | "waitUntil";
  /** Builds the refusals (423, 503, and 400 for a name the request made unusable); by default application/problem+json, with Retry-After on 423 and 503. */
  onLocked?: (c: Context<LockGuardEnv<E>>, refusal: Refusal) => Response | Promise<Response>;
}

/**
 * Lets one request at a time through a route, per lock name. Others get `423 Locked` with
 * `Retry-After`. The handler finds the lease in `c.get("lease")`: heartbeat it when work
 * runs long, pass `lease.signal` to downstream fetches and `lease.fence` to storage. The
 * lock is released once the response body has been sent (a streamed body is guarded work too),
 * or at once when the handler throws.
 *
 * @example
 * const app = new Hono<{ Variables: LockVariables }>();
 * app.post("/orders/:id/pay", lockGuard({ locks, name: (c) => `order:${c.req.param("id")}` }), async (c) => {
 *   const lease = c.get("lease");
 *   await charge(c.req.param("id"), { fencingToken: lease.fence, signal: lease.signal });
 *   return c.json({ paid: true });
 * });
 */
export function lockGuard<E extends Env = Env>(
  options: LockGuardOptions<E>,
): MiddlewareHandler<LockGuardEnv<E>> {
  const settings = guardSettings(options, "lockGuard options");
  const { locks, name, onLocked = refusalResponse } = settings.checked;
  return async function lockGuard(c, next) {
    // A lock set given as it is was checked when the guard was built.
    const lockSet = typeof locks === "function" ? lockSetOf(locks(c), "lockGuard options") : locks;
    // The request's signal matters only while waiting, and reading it makes Deno print a warning.
    const signal = settings.waitMs > 0 ? c.req.raw.signal : undefined;
    const ctx = executionContext(c);
    const entered = await enterGuard(lockSet, name(c), settings, signal, ctx);
    if (!(entered instanceof Lease)) return onLocked(c, entered);
    c.set("lease", entered);
    try {
      await next();
    } catch (error) {
      await leaveGuard(entered, ctx, settings.release);
      throw error;
    }
    // Hono turns a handler's error into c.error and an error response (no work left to guard).
    // A handler that returned no Response is an error too, Hono's own, once c.res is left alone.
    if (c.error || !c.finalized) await leaveGuard(entered, ctx, settings.release);
    else c.res = await leaveWhenSent(c.res, entered, ctx, settings.release, c.req.method);
  };
}

/** Hono throws when there is no execution context (Node, tests); release inline then. */
function executionContext(c: Context) {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}
