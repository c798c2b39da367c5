// What lockGuard and guardFetch share: the lock per request, refusals, and the release once the body is sent.
import { ClockBehindError, LockConfigError, LockTimeoutError, LockUnavailableError } from "../core/errors.ts";
import { guardOptionsSchema, hasMethod } from "./guard-options.ts";
import type { Lease } from "../lock/lease.ts";
import type { Locks } from "../lock/locks.ts";
import { parseOptions } from "../core/options.ts";
import { badNameProblem, problemResponse, requestedName, type Problem } from "../fencing/http/problem.ts";

/** The part of a Workers ExecutionContext a guard needs. */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

type ReleaseMode = "await" | "waitUntil";

interface GuardSettings {
  waitMs: number;
  leaseMs: number | undefined;
  wake: "poll" | "push" | undefined;
  release: ReleaseMode;
}

/**
 * lockGuard's and guardFetch's options, checked once when the guard is built (a misspelled
 * option or a bad value would otherwise be ignored, or fail every request), defaults filled in.
 */
export function guardSettings<O extends Partial<GuardSettings>>(options: O, what: string): GuardSettings & { checked: O } {
  // Only the values checked are used, callbacks too: a getter could answer a second read
  // differently. The strict schema transforms nothing, so they are `options`'s own.
  const checked = parseOptions(guardOptionsSchema, options, what) as unknown as O;
  const { waitMs = 0, leaseMs, wake, release = "await" } = checked;
  return { waitMs, leaseMs, wake, release, checked };
}

/** What a guard's locks factory gave for a request: a lock set, or the app's mistake, thrown. */
export function lockSetOf(locks: unknown, what: string): Locks {
  if (hasMethod(locks, "acquire")) return locks as Locks;
  // An async factory is the likely slip: createLocks needs no await.
  const got = locks instanceof Promise ? "a Promise: createLocks needs no await" : typeof locks;
  throw new LockConfigError(what, [`locks: expected a lock set from createLocks(), got ${got}`]);
}

/** The default refusal: application/problem+json, with Retry-After; a 503's cause goes to the log. */
export function refusalResponse(_request: unknown, { problem, headers, error }: Refusal): Response {
  logCause(error);
  return problemResponse(problem, headers);
}

/** A 503's cause, logged: the body is the client's and names no host or token, so only the log says what to fix. */
export function logCause(error: Error | undefined): void {
  if (error) console.error(error);
}

/** Why a guarded request was turned away, as a problem and the headers that go with it. */
export interface Refusal {
  problem: Problem;
  headers: Record<string, string>;
  /** Behind a 503: the error that says what failed and what to fix, for the app to log. */
  error?: LockUnavailableError | ClockBehindError;
}

/**
 * Takes the lock for one request, or says why not: a name the request made unusable (400),
 * busy, or the client gone while waiting (423), or Redis failing or unreachable (503). No name at all is
 * the app's mistake, thrown.
 */
export async function enterGuard(
  locks: Locks,
  requested: unknown,
  { waitMs, leaseMs, wake }: GuardSettings,
  signal: AbortSignal | undefined,
  ctx: WaitUntil | undefined,
): Promise<Lease | Refusal> {
  const name = requestedName(requested, "lock name");
  if (typeof name !== "string") return { problem: name, headers: {} };
  // Workers cancels what a request left running once its response is sent: a wait that gives up
  // must still give its place in line back.
  const waitUntil = ctx && ((work: Promise<unknown>) => ctx.waitUntil(work));
  try {
    return await locks.acquire(name, { waitMs, leaseMs, wake, signal, waitUntil });
  } catch (error) {
    if (error instanceof LockTimeoutError) return locked(error.retryAfterMs);
    if (error instanceof ClockBehindError) return clockBehind(error);
    if (error instanceof LockUnavailableError) return unavailable(error);
    // A name that passed requestedName, but not the lock set's hashTag (keys.ts): the request's to fix.
    if (error instanceof LockConfigError && error.message.startsWith("Invalid lock name")) return { problem: badNameProblem(error), headers: {} };
    // The client stopped waiting and went away: nobody reads this answer, and it is no error.
    if (signal?.aborted) return locked(0);
    throw error;
  }
}

/** Releases: awaited, or with "waitUntil" handed to ctx (where there is one) so the response is not held up. */
export async function leaveGuard(lease: Lease, ctx: WaitUntil | undefined, mode: ReleaseMode): Promise<void> {
  // The lease lapses by its TTL if this fails; the handler's own outcome must stand.
  const released = lease.release().catch(() => undefined);
  if (ctx && mode === "waitUntil") ctx.waitUntil(released);
  else await released;
}

/**
 * Releases once the response has been sent: a streamed body is guarded work too, so the lease is
 * held until the body ends, fails or is cancelled. "await" releases before its last byte goes out,
 * so the client's next request finds the lock free. A HEAD response's body is never sent: the lock goes at once.
 */
export async function leaveWhenSent(
  response: Response,
  lease: Lease,
  ctx: WaitUntil | undefined,
  mode: ReleaseMode,
  method: string,
): Promise<Response> {
  try {
    if (method === "HEAD") {
      await response.body?.cancel();
      response = new Response(null, response);
    }
    if (!response.body) {
      await leaveGuard(lease, ctx, mode);
      return response;
    }
    return new Response(releasingBody(response, lease, ctx, mode), response);
  } catch (error) {
    // A Response that cannot be passed on (its body locked or used, or not a Response at all).
    await leaveGuard(lease, ctx, mode);
    throw error;
  }
}

/** The response's body, passed on chunk by chunk, releasing the lease when it ends. */
function releasingBody(response: Response, lease: Lease, ctx: WaitUntil | undefined, mode: ReleaseMode) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  // With a Content-Length the client has the body at its last byte, so "await" releases before
  // passing that byte on; not with a Content-Encoding, where it counts encoded bytes.
  const encoded = !/^(identity)?$/i.test(response.headers.get("Content-Encoding") ?? "");
  const length = encoded ? Infinity : Number(response.headers.get("Content-Length") || Infinity);
  let sent = 0;
  let left: Promise<void> | undefined;
  const leave = (as: ReleaseMode) => (left ??= leaveGuard(lease, ctx, as));
  // Nobody waits on a body that failed or was dropped: the release goes to ctx where there is one.
  const abandon = () => void leave("waitUntil");
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        controller.error(error);
        return abandon();
      }
      if (chunk.done || (sent += chunk.value.byteLength) >= length) {
        await leave(mode);
        if (!chunk.done) {
          // Every declared byte is out. The source may not have ended, and may be a fetch on
          // lease.signal, which the release just aborted.
          controller.enqueue(chunk.value);
          reader.cancel().catch(() => undefined);
        }
        return controller.close();
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      // The source first: releasing aborts lease.signal, which may be the signal of the fetch
      // that is the source, and its cancel would then fail with that abort.
      const cancelled = reader.cancel(reason).catch(() => undefined);
      abandon();
      return cancelled;
    },
  });
}

function locked(retryAfterMs: number): Refusal {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    problem: { type: "urn:fencelock:problem:locked", title: "Locked", status: 423,
      detail: `Another request holds this resource; retry in ${seconds} s.`, retryAfter: seconds },
    headers: { "Retry-After": String(seconds) },
  };
}

function clockBehind(error: ClockBehindError): Refusal {
  const seconds = Math.max(1, Math.ceil(error.retryAfterMs / 1000));
  return {
    problem: { type: "urn:fencelock:problem:clock-behind", title: "Lock service unavailable", status: 503,
      detail: `The lock is free, but Redis' clock is behind its last fence; retry in ${seconds} s.`, retryAfter: seconds },
    headers: { "Retry-After": String(seconds) },
    error,
  };
}

function unavailable(error: LockUnavailableError): Refusal {
  return {
    problem: { type: "urn:fencelock:problem:lock-unavailable", title: "Lock service unavailable", status: 503,
      detail: "The lock could not be taken: Redis failed or did not answer; retry shortly." },
    headers: { "Retry-After": "1" },
    error,
  };
}
