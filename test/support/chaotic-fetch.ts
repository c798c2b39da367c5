import { sleep } from "../../src/waiting/backoff.ts";

/** How a chaotic network behaves: a seeded, so replayable, run of delays and lost responses. */
export interface ChaoticNet {
  seed: number;
  /** Per mille of responses dropped after the request was applied. */
  dropPerMille: number;
  maxDelayMs: number;
}

/** A small seeded generator (mulberry32): the same seed gives the same network. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A fetch that delays requests and responses, and loses some responses after the server applied
 * the request (never the same body twice), so a retrying client sends it again. Event streams
 * are delayed but never lost.
 */
export function chaoticFetch(
  real: typeof fetch,
  net: ChaoticNet,
  stats: { requests: number; dropped: number },
  log?: (line: string) => void,
): typeof fetch {
  const random = prng(net.seed);
  const droppedBodies = new Set<string>();
  return async (input, init) => {
    const stream = new Headers(init?.headers).get("accept") === "text/event-stream";
    stats.requests++;
    await sleep(Math.floor(random() * net.maxDelayMs));
    const body = String(init?.body);
    log?.(`net send ${body.slice(0, 90)}`);
    const response = await real(input, init);
    if (stream) return response;
    if (random() * 1000 < net.dropPerMille && !droppedBodies.has(body)) {
      droppedBodies.add(body);
      stats.dropped++;
      log?.(`net DROP ${body.slice(0, 90)}`);
      await response.text();
      throw new TypeError("fetch failed: connection reset after the request was sent");
    }
    await sleep(Math.floor(random() * net.maxDelayMs));
    return response;
  };
}
