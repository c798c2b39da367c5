// Networks (for withFetch) that make requests run twice, and know which requests are still out: in
// quorum mode a call returns on a majority while copies to the other nodes are still on their way.
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import type { LuaScript } from "../../../src/redis/scripts.gen.ts";
import { until } from "../until.ts";

type Fetch = typeof fetch;

/** Wraps a network so that `idle()` resolves once every request it passed on has been answered. */
export function tracked(wrap: (real: Fetch) => Fetch) {
  let inFlight = 0;
  let lastActivity = performance.now();
  return {
    wrap: (real: Fetch): Fetch => {
      const inner = wrap(real);
      return async (input, init) => {
        inFlight++;
        try {
          return await inner(input, init);
        } finally {
          inFlight--;
          lastActivity = performance.now();
        }
      };
    },
    /**
     * Every request sent so far has been answered, and none went out for 100 ms: a reply can start
     * another request (a write-back after a late grant) a moment after it arrives.
     */
    idle: () => until(async () => inFlight === 0 && performance.now() - lastActivity > 100, 10_000),
  };
}

/**
 * The first request that runs `script` at `nodeUrl` is applied but its reply is lost; the client's
 * retry of it is held back `delayMs`, as a slow network would: it lands after the call that sent it
 * has returned on the other nodes' answers.
 */
export function lateRetryOf(script: LuaScript, nodeUrl: string, delayMs: number) {
  let state: "waiting" | "dropped" | "retrying" | "landed" = "waiting";
  const wrap = (real: Fetch): Fetch => async (input, init) => {
    const sha1 = scriptSha1(script);
    const mine = String(input).startsWith(nodeUrl) && String(init?.body).includes(sha1);
    const retry = mine && state === "dropped";
    if (retry) {
      state = "retrying";
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    const response = await real(input, init);
    if (retry) state = "landed";
    if (!mine || state !== "waiting") return response;
    state = "dropped";
    await response.text();
    throw new TypeError("fetch failed: connection reset after the request was sent");
  };
  // A test checks that the late retry did land, or it would pass on a network that never made one.
  return Object.assign(wrap, { landed: () => state === "landed" });
}

/**
 * Loses the reply of the first `times` distinct requests after the node applied them, never the
 * same body twice, so the client's one retry of each gets through.
 */
export function droppingFirstReplies(times: number) {
  const dropped = new Set<string>();
  return (real: Fetch): Fetch => async (input, init) => {
    const response = await real(input, init);
    const body = String(init?.body);
    if (dropped.size >= times || dropped.has(body)) return response;
    dropped.add(body);
    await response.text();
    throw new TypeError("fetch failed: connection reset after the request was sent");
  };
}

/** Loses every reply to `script` from the node at `nodeUrl` (each applied there): the call fails. */
export function losingRepliesOf(script: LuaScript, nodeUrl: string) {
  return (real: Fetch): Fetch => async (input, init) => {
    const response = await real(input, init);
    if (!String(input).startsWith(nodeUrl) || !String(init?.body).includes(scriptSha1(script))) return response;
    await response.text();
    throw new TypeError("fetch failed: connection reset after the request was sent");
  };
}

/** Holds back every reply from the node at `nodeUrl` by `delayMs`: a node in a farther region. */
export function slowNode(nodeUrl: string, delayMs: number) {
  return (real: Fetch): Fetch => async (input, init) => {
    const response = await real(input, init);
    if (String(input).startsWith(nodeUrl)) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return response;
  };
}
