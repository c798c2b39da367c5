// Shared helpers for the Deno suite. Run it with `node scripts/test-deno.ts`, which starts the
// local Upstash-compatible server and hands its URL and token over in the environment.
import { Redis } from "@upstash/redis";

/** The real @upstash/redis client, configured the way a Deno app would be: from the environment. */
export function redisFromEnv(): Redis {
  if (!Deno.env.get("UPSTASH_REDIS_REST_URL") || !Deno.env.get("UPSTASH_REDIS_REST_TOKEN")) {
    throw new Error("UPSTASH_REDIS_REST_URL/TOKEN are not set: run the Deno suite with `node scripts/test-deno.ts`");
  }
  return Redis.fromEnv();
}

/** A key prefix of its own per test, so tests never see each other's locks or data. */
export function uniquePrefix(label: string): string {
  return `deno-${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Serves `handler` on a free loopback port; shut it down with `await using`. */
export function serve(handler: Deno.ServeHandler): Deno.HttpServer<Deno.NetAddr> & { url: string } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  return Object.assign(server, { url: `http://127.0.0.1:${server.addr.port}` });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Waits until a request's handler reports it is inside (`entered`), and fails instead of hanging
 * when the request finishes first (say, refused by a broken guard).
 */
export async function untilInside(entered: Promise<void>, request: Promise<Response>): Promise<void> {
  const endedFirst = request.then((res) => {
    throw new Error(`the request ended (${res.status}) before its handler was entered`);
  });
  endedFirst.catch(() => {}); // once inside, the request ending later is expected
  await Promise.race([entered, endedFirst]);
}
