// fencedFetch: fetch() under a lease, its fence in the Fencing-Token header and a stale answer thrown.
import { LockConfigError, StaleFenceError } from "../../core/errors.ts";
import { checkFence, FENCE_HEADER } from "../../core/fence.ts";
import type { Lease } from "../../lock/lease.ts";
import { anySignal, isAbortSignal } from "../../core/signals.ts";
import { STALE_FENCE_PROBLEM } from "./problem.ts";

/**
 * fetch() for work done under a lease: sends the lease's fence in the Fencing-Token
 * header, aborts when the lease is lost, and turns a stale-fence answer (409) into
 * StaleFenceError so it cannot be mistaken for success. `lease` must be a Lease (from acquire()
 * or resume()): a plain `{ name, owner, fence }` is refused with LockConfigError, since it has no
 * signal to stop the request with.
 *
 * @example
 * await fencedFetch(lease, `${BLOBS}/invoice-42`, { method: "PUT", body });
 */
export async function fencedFetch(lease: Lease, input: string | URL | Request, init?: RequestInit | null): Promise<Response> {
  // A { name, owner, fence } record (what resume() takes) has no signal: its request would go on
  // after the lease is lost, and its fence would go out unchecked.
  if (!isAbortSignal(lease?.signal)) {
    throw new LockConfigError("fencedFetch lease", ["expected a Lease from acquire() or resume(); resume() a stored { name, owner, fence } first"]);
  }
  checkFence(lease.fence, "fencedFetch lease");
  init ??= {};
  // Headers given in init replace a Request's own, as in fetch(); otherwise the Request's are kept.
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set(FENCE_HEADER, String(lease.fence));
  // Likewise init's signal, or else the Request's (a proxy's incoming request whose client left);
  // as in fetch(), `signal: undefined` is no signal given, and `null` drops the Request's.
  const own = init.signal !== undefined ? init.signal : input instanceof Request ? input.signal : undefined;
  const signal = own ? anySignal([own, lease.signal]) : lease.signal;
  const response = await fetch(input, { ...init, headers, signal });
  if (response.status !== 409) return response;
  const { problem, conflict } = await readConflict(response);
  if (problem?.type === STALE_FENCE_PROBLEM && typeof problem.highestFence === "number") {
    const resource = response.url || (input instanceof Request ? input.url : String(input));
    throw new StaleFenceError(resource, lease.fence, problem.highestFence);
  }
  return conflict;
}

/** A problem document is a few hundred bytes; a longer body is some other conflict. */
const PROBLEM_MAX_BYTES = 64 * 1024;

type Conflict = { problem: { type?: unknown; highestFence?: unknown } | null; conflict: Response };

/**
 * Reads a JSON 409 just far enough to tell a stale-fence problem; any other goes back whole, never fully
 * buffered. Not clone(): a tee branch cancelled while the other is read makes a later abort unhandled.
 */
async function readConflict(response: Response): Promise<Conflict> {
  const reader = /^application\/(problem\+)?json/i.test(response.headers.get("content-type") ?? "") && response.body?.getReader();
  if (!reader) return { problem: null, conflict: response };
  const seen: Uint8Array[] = [];
  let size = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    seen.push(chunk.value);
    size += chunk.value.length;
    // Unlike fetch's own, this body dropped unread keeps its connection until the lease ends.
    if (size > PROBLEM_MAX_BYTES) return { problem: null, conflict: withBody(response, seen, reader) };
  }
  let problem: Conflict["problem"] = null;
  const decoder = new TextDecoder();
  try {
    problem = JSON.parse(seen.map((chunk) => decoder.decode(chunk, { stream: true })).join("") + decoder.decode());
  } catch {
    // not JSON after all: the caller's to read
  }
  return { problem, conflict: withBody(response, seen) };
}

/** `response` again, its body the chunks already read and then what `rest` still holds. */
function withBody(response: Response, seen: Uint8Array[], rest?: ReadableStreamDefaultReader<Uint8Array>): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of seen) controller.enqueue(chunk);
      if (!rest) controller.close();
    },
    async pull(controller) {
      const chunk = await rest?.read();
      if (!chunk || chunk.done) controller.close();
      else controller.enqueue(chunk.value);
    },
    cancel: (reason) => rest?.cancel(reason),
  });
  return asFetched(new Response(body, response), response);
}

/** `copy`, and each clone of it, with where `fetched` came from: `new Response` cannot set these. */
function asFetched(copy: Response, fetched: Response): Response {
  return Object.defineProperties(copy, {
    url: { value: fetched.url },
    redirected: { value: fetched.redirected },
    clone: { value: () => asFetched(Response.prototype.clone.call(copy), fetched) },
  });
}
