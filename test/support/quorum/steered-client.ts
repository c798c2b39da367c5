// A RedisClient that lets a test lose or hold back single script calls to one node, by script
// name; the calls it lets through run the real scripts on a real Redis.
import type { RedisClient } from "../../../src/core/client.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";

/**
 * What happens to a call: lost (never answered), held until the promise settles, sent at once with
 * its reply held until `replyAfter` settles (the script has run: only the reply is late), or sent.
 */
export type Steer = (script: string) => "lost" | Promise<void> | { replyAfter: Promise<void> } | undefined;

const names = new Map(Object.values(scripts).flatMap((script) => [[scriptSha1(script), script.name], [script.text, script.name]]));

export interface Steered {
  client: RedisClient;
  steer: Steer | undefined;
  /** Resolves once no call is out but lost ones, nor set off by a reply (a give-back counts). */
  idle(): Promise<void>;
}

export function steered(client: RedisClient): Steered {
  let out = 0;
  const wrapper: Steered = {
    client,
    steer: undefined,
    // A macrotask lets every microtask a reply set off run first, so a call it makes is counted.
    async idle() {
      do await new Promise((resolve) => setImmediate(resolve));
      while (out > 0);
    },
  };
  const call = (send: () => Promise<unknown>, script: string): Promise<unknown> => {
    const fate = wrapper.steer?.(names.get(script) ?? "unknown");
    if (fate === "lost") return new Promise(() => {});
    out++;
    const reply = fate && "replyAfter" in fate
      ? send().then(async (reply) => {
        await fate.replyAfter;
        return reply;
      })
      : fate ? fate.then(send) : send();
    return reply.finally(() => out--);
  };
  wrapper.client = {
    evalsha: (sha1, keys, args) => call(() => client.evalsha(sha1, keys, args), sha1),
    eval: (text, keys, args) => call(() => client.eval(text, keys, args), text),
  };
  return wrapper;
}
