// requireFence (fencelock/hono): Hono middleware for a storage route that refuses stale fences.
import type { Context, Env, MiddlewareHandler } from "hono";
import * as z from "zod/mini";
import { LockConfigError, LockUnavailableError, StaleFenceError } from "../core/errors.ts";
import { FENCE_HEADER, parseFenceHeader } from "../core/fence.ts";
import type { FencedStore } from "../fencing/store.ts";
import { aFunction, hasMethod, optionalFunction } from "./guard-options.ts";
import { parseOptions } from "../core/options.ts";
import { problemResponse, requestedName, staleFenceProblem, type Problem } from "../fencing/http/problem.ts";
import { logCause } from "./guard.ts";

/** What requireFence() puts on the context: `c.get("fence")`. */
export type FenceVariables = { fence: number };

/** The app's env `E` (its Bindings and Variables), with what requireFence() adds. */
export type RequireFenceEnv<E extends Env> = E & { Variables: FenceVariables };

/** `E`: the app's env, so that the callbacks see its typed `c.env` and variables. */
export interface RequireFenceOptions<E extends Env = Env> {
  /** The fenced store whose resources this route writes. */
  store: FencedStore;
  /** The resource a request writes, e.g. `(c) => c.req.param("id")`; unusable: 400, undefined: 500 (see lockGuard's name). */
  resource: (c: Context<RequireFenceEnv<E>>) => string | undefined;
  /** Register the fence at the store before the handler runs (default true): see "claim" in the README. */
  claim?: boolean;
  /**
   * Builds the error response; by default an application/problem+json body. `error`: behind a 503,
   * the store's error, which says what failed and what to fix (the default logs it).
   */
  onProblem?: (c: Context<RequireFenceEnv<E>>, problem: Problem, error?: LockUnavailableError) => Response | Promise<Response>;
}

/**
 * Guards a storage route with fencing tokens: the request must carry its lease's fence in
 * the Fencing-Token header; missing -> 428, malformed -> 400, older than one the resource
 * has seen -> 409 with the highest fence, Redis failing or unreachable -> 503 with Retry-After. The
 * handler gets the fence from `c.get("fence")` and must still write through
 * `store.write(resource, value, fence)`, which checks again atomically; a StaleFenceError it
 * throws also becomes a 409.
 *
 * @example
 * const app = new Hono<{ Variables: FenceVariables }>();
 * app.put("/blobs/:id", requireFence({ store, resource: (c) => c.req.param("id") }), async (c) => {
 *   await store.write(c.req.param("id"), await c.req.json(), c.get("fence"));
 *   return c.body(null, 204);
 * });
 */
export function requireFence<E extends Env = Env>(
  options: RequireFenceOptions<E>,
): MiddlewareHandler<RequireFenceEnv<E>> {
  // Built here rather than when the module loads, so an app without requireFence() does not carry it.
  const schema = z.strictObject({
    store: z.custom<unknown>((v) => hasMethod(v, "write") && hasMethod(v, "claim"), "expected the store from createFencedStore()"),
    resource: aFunction("a function of the request that returns the resource name"),
    onProblem: optionalFunction,
    claim: z.optional(z.boolean("expected true or false")),
  }, "expected an options object");
  // The values checked, never a second read of `options` (a getter could answer differently).
  const checked = parseOptions(schema, options, "requireFence options") as RequireFenceOptions<E>;
  const { store, resource, claim = true, onProblem = defaultProblem } = checked;
  return async function requireFence(c, next) {
    const parsed = parseFenceHeader(c.req.header(FENCE_HEADER));
    if (!parsed.ok) return onProblem(c, headerProblem(parsed.problem));
    const name = requestedName(resource(c), "resource name");
    if (typeof name !== "string") return onProblem(c, name);
    try {
      if (claim) await store.claim(name, parsed.fence);
    } catch (error) {
      const problem = storeProblem(error);
      if (!problem) throw error;
      return onProblem(c, problem, error instanceof LockUnavailableError ? error : undefined);
    }
    c.set("fence", parsed.fence);
    await next();
    // Hono hands a handler's error to onError before we see it; the stale write is still ours to
    // answer. Nothing else is: a 503 "retry" after the handler ran could repeat its work.
    if (c.error instanceof StaleFenceError) c.res = await onProblem(c, staleFenceProblem(c.error));
  };
}

function headerProblem(kind: "missing" | "malformed"): Problem {
  return kind === "missing"
    ? { type: "urn:fencelock:problem:fence-required", title: "Fencing token required", status: 428,
        detail: `Send the lease's fence in the ${FENCE_HEADER} header.` }
    : { type: "urn:fencelock:problem:malformed-fence", title: "Malformed fencing token", status: 400,
        detail: `${FENCE_HEADER} must be a lease's fence: a positive integer in decimal digits, below 2^53 and not an hour ahead of now in µs.` };
}

function storeProblem(error: unknown): Problem | null {
  if (error instanceof StaleFenceError) {
    return staleFenceProblem(error);
  }
  // The store's Redis refused it as far ahead of its clock (failures.ts names the error so): the
  // token's fault, or the clocks'.
  if (error instanceof LockConfigError && error.message.startsWith("Invalid fence:")) {
    return { ...headerProblem("malformed"), detail: `${FENCE_HEADER} is over 70 minutes ahead of the store Redis' clock: forged, or a clock is far off.` };
  }
  if (error instanceof LockUnavailableError) {
    return { type: "urn:fencelock:problem:fence-check-unavailable", title: "Fence check unavailable",
      status: 503, detail: "The fence could not be checked: Redis failed or did not answer; retry shortly.", retryAfter: 1 };
  }
  return null;
}

/** application/problem+json, with the Retry-After a 503 says (as lockGuard's); a 503's cause goes to the log. */
function defaultProblem(_c: unknown, problem: Problem, error?: LockUnavailableError): Response {
  logCause(error);
  return problemResponse(problem, problem.retryAfter ? { "Retry-After": String(problem.retryAfter) } : {});
}
