import { StaleFenceError } from "./errors.ts";
import { FENCE_HEADER } from "./fence.ts";
import type { Lease } from "./lease.ts";
import { STALE_FENCE_PROBLEM } from "./problem.ts";

/**
 * fetch() for work done under a lease: sends the lease's fence in the Fencing-Token
 * header, aborts when the lease is lost, and turns a stale-fence answer (409) into
 * StaleFenceError so it cannot be mistaken for success.
 *
 * @example
 * await fencedFetch(lease, `${BLOBS}/invoice-42`, { method: "PUT", body });
 */
export async function fencedFetch(lease: Lease, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  // Headers given in init replace a Request's own, as in fetch(); otherwise the Request's are kept.
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set(FENCE_HEADER, String(lease.fence));
  // Likewise init's signal, or else the Request's (a proxy's incoming request whose client left).
  const own = "signal" in init ? init.signal : input instanceof Request ? input.signal : undefined;
  const signal = own ? AbortSignal.any([own, lease.signal]) : lease.signal;
  const response = await fetch(input, { ...init, headers, signal });
  if (response.status === 409) {
    const problem = await staleFenceProblemIn(response);
    if (problem?.type === STALE_FENCE_PROBLEM && typeof problem.highestFence === "number") {
      // The caller never sees this response: its unread body would hold the connection.
      await response.body?.cancel();
      const resource = response.url || (input instanceof Request ? input.url : String(input));
      throw new StaleFenceError(resource, lease.fence, problem.highestFence);
    }
  }
  return response;
}

/** A problem document is a few hundred bytes; a longer body is some other conflict. */
const PROBLEM_MAX_CHARS = 64 * 1024;

/**
 * The JSON problem a 409 carries, or null. Read from a copy and only so far: any other 409 (an
 * HTML page, a long or endless stream) goes back to the caller unread, not buffered whole first.
 */
async function staleFenceProblemIn(response: Response): Promise<{ type?: unknown; highestFence?: unknown } | null> {
  if (!/json/i.test(response.headers.get("content-type") ?? "")) return null;
  const reader = response.clone().body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      if (text.length > PROBLEM_MAX_CHARS) throw new RangeError("not a problem document");
    }
    return JSON.parse(text) as { type?: unknown; highestFence?: unknown };
  } catch {
    // Stops the copy; the caller's body goes on unaffected. Not awaited: a tee's branch settles its
    // cancel only once the other branch is cancelled too, which is the caller's to do.
    reader?.cancel().catch(() => undefined);
    return null;
  }
}
