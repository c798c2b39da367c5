// guardFetch (fencelock/worker): lockGuard for a plain Workers fetch handler, without Hono.
import { LockConfigError } from "../core/errors.ts";
import { enterGuard, guardSettings, leaveGuard, leaveWhenSent, lockSetOf, refusalResponse, type Refusal, type WaitUntil } from "./guard.ts";
import { Lease } from "../lock/lease.ts";
import type { Locks } from "../lock/locks.ts";

export type { Refusal, WaitUntil } from "./guard.ts";

export interface GuardFetchOptions<Env> {
  /** The lock set for this environment, e.g. built from env.UPSTASH_REDIS_REST_URL / _TOKEN. */
  locks: (env: Env) => Locks;
  /** The lock a request needs; e.g. `(request) => new URL(request.url).pathname`. Unusable: 400; undefined: 500 (see lockGuard). */
  name: (request: Request, env: Env) => string | undefined;
  /** How long to wait for a busy lock before answering 423 (default 0). */
  waitMs?: number;
  /** Lease length for these requests (default: the lock set's leaseMs). */
  leaseMs?: number;
  /** "push" (default on one Redis): a waiting request is handed the lock by the holder's release (see lockGuard); or "poll". */
  wake?: "poll" | "push";
  /** "await" (default) releases before the body's last byte goes out; "waitUntil" releases in the background. */
  release?: "await" | "waitUntil";
  /** Builds the refusals (423, 503, and 400 for a name the request made unusable); by default application/problem+json, with Retry-After on 423 and 503. */
  onLocked?: (request: Request, refusal: Refusal) => Response | Promise<Response>;
}

export type GuardedHandler<Env, Ctx> = (request: Request, env: Env, ctx: Ctx, lease: Lease) => Response | Promise<Response>;

/**
 * lockGuard for a plain Workers `fetch` handler, without Hono: one request at a time per
 * lock name, 423 with Retry-After for the others, release once the response body has been
 * sent (a streamed body is guarded work too), or at once when the handler throws.
 *
 * @example
 * export default {
 *   fetch: guardFetch({
 *     locks: (env: Env) => createLocks({ redis: new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }) }),
 *     name: (request) => new URL(request.url).pathname,
 *   }, async (request, env, ctx, lease) => new Response(`fence ${lease.fence}`)),
 * };
 */
export function guardFetch<Env, Ctx extends WaitUntil = WaitUntil>(
  options: GuardFetchOptions<Env>,
  handler: GuardedHandler<Env, Ctx>,
): (request: Request, env: Env, ctx: Ctx) => Promise<Response> {
  const settings = guardSettings(options, "guardFetch options");
  const { locks, name, onLocked = refusalResponse } = settings.checked;
  if (typeof locks !== "function") {
    throw new LockConfigError("guardFetch options", ["locks: expected a function of env that returns the lock set"]);
  }
  if (typeof handler !== "function") throw new LockConfigError("guardFetch", ["expected a handler function as the second argument"]);
  return async function guardedFetch(request, env, ctx) {
    const signal = settings.waitMs > 0 ? request.signal : undefined;
    const entered = await enterGuard(lockSetOf(locks(env), "guardFetch options"), name(request, env), settings, signal, ctx);
    if (!(entered instanceof Lease)) return onLocked(request, entered);
    let response: Response;
    try {
      response = await handler(request, env, ctx, entered);
    } catch (error) {
      await leaveGuard(entered, ctx, settings.release);
      throw error;
    }
    return leaveWhenSent(response, entered, ctx, settings.release, request.method);
  };
}
