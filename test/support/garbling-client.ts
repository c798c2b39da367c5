import type { RedisClient } from "../../src/index.ts";
import { upstash } from "./upstash.ts";

/**
 * The real client, except that while `garbage.reply` is set each script runs on the real server
 * and its reply is then replaced: an endpoint or proxy that answers something other than our scripts.
 */
export function garbling(garbage: { reply?: unknown }): RedisClient {
  const real = upstash();
  const swap = async (reply: Promise<unknown>) => {
    const value = await reply;
    return garbage.reply === undefined ? value : garbage.reply;
  };
  return { evalsha: (sha, keys, args) => swap(real.evalsha(sha, keys, args)), eval: (text, keys, args) => swap(real.eval(text, keys, args)) };
}
