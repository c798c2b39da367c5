import type { RedisClient } from "../../../src/core/client.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { upstash } from "../upstash.ts";

/**
 * Makes clients (one per isolate) that log each script call, by script name, and its reply or
 * error to `trace`, stamped with `now()`; retries quick enough to end well within timeoutMs.
 */
export async function tracedClients(trace: string[], now: () => number): Promise<(label?: string) => RedisClient> {
  const shas = new Map<string, string>();
  for (const script of Object.values(scripts)) shas.set(scriptSha1(script), script.name);
  let callIds = 0;
  return (label = "?"): RedisClient => {
    const real = upstash({ retry: { retries: 3, backoff: () => 10 } });
    const traced = async <T>(what: string, args: unknown[], call: () => Promise<T>) => {
      const id = ++callIds;
      trace.push(`${now()} ${label} #${id} -> ${what} ${args.map((a) => String(a).slice(0, 12)).join(" ")}`);
      try {
        const reply = await call();
        trace.push(`${now()} ${label} #${id} <- ${JSON.stringify(reply)}`);
        return reply;
      } catch (error) {
        trace.push(`${now()} ${label} #${id} !! ${String(error).slice(0, 60)}`);
        throw error;
      }
    };
    return {
      evalsha: (sha, keys, args) => traced(shas.get(sha) ?? sha, [keys[0], ...args], () => real.evalsha(sha, keys, args)),
      eval: (text, keys, args) => traced("eval", [keys[0], ...args], () => real.eval(text, keys, args)),
      subscribe: (channel) => real.subscribe(channel),
    };
  };
}
