import type { RedisClient } from "../../src/index.ts";
import { scriptSha1 } from "../../src/redis/run-script.ts";
import * as scripts from "../../src/redis/scripts.gen.ts";
import { upstash } from "./upstash.ts";

/** The real client to the local server, with its acquire attempts counted in `attempts.n`. */
export async function countingAcquires(real = upstash()) {
  const acquireSha1 = scriptSha1(scripts.acquire);
  const attempts = { n: 0 };
  const client: RedisClient = {
    evalsha: (sha, keys, args) => ((attempts.n += sha === acquireSha1 ? 1 : 0), real.evalsha(sha, keys, args)),
    eval: (text, keys, args) => real.eval(text, keys, args),
    subscribe: (channel) => real.subscribe(channel),
  };
  return { client, attempts };
}
