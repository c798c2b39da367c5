// What each node was asked and answered, for the trace of a failing model run: every lock script a
// client sends through @upstash/redis, by node, with the owner and ticket shortened and the reply.
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import type { History } from "../chaos/history.ts";
import type { ModelNodes } from "./model-nodes.ts";

type Fetch = typeof fetch;

/** SHA-1 (EVALSHA) or text (EVAL) -> script name. */
async function scriptNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const [name, script] of Object.entries(scripts)) {
    if (typeof script !== "object" || !script || !("text" in script)) continue;
    names.set(scriptSha1(script), name);
    names.set(script.text, name);
  }
  return names;
}

const short = (value: unknown) => String(value).slice(0, 6);

/**
 * A fetch wrapper (for withFetch) that notes each script call a node answered, as
 * "n1 acquire o=ab12cd t=ef34gh [args] -> [reply]" (or the failure), into the history's trace.
 */
export async function nodeLog(nodes: ModelNodes, history: History): Promise<(real: Fetch) => Fetch> {
  const names = await scriptNames();
  return (real) => async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const node = nodes.nodeOf(url);
    if (node < 0 || typeof init?.body !== "string") return real(input, init);
    let calls: unknown[][] = [];
    try {
      const parsed = JSON.parse(init.body) as unknown[];
      calls = (Array.isArray(parsed[0]) ? parsed : [parsed]) as unknown[][];
    } catch {
      return real(input, init);
    }
    const described = calls.map((call) => describeCall(call, names));
    try {
      const response = await real(input, init);
      const replies = (await response.clone().json().catch(() => null)) as unknown;
      const results = (Array.isArray(replies) ? replies : [replies]) as ({ result?: unknown; error?: unknown } | null)[];
      described.forEach((what, i) => what && history.record(`n${node} ${what} -> ${JSON.stringify(results[i]?.result ?? results[i]?.error ?? results[i])}`));
      return response;
    } catch (error) {
      described.forEach((what) => what && history.record(`n${node} ${what} -> ${String(error).slice(0, 40)}`));
      throw error;
    }
  };
}

function describeCall(call: unknown[], names: Map<string, string>): string | undefined {
  // EVAL carries the script's text where EVALSHA carries its SHA-1.
  const [command, sha, keyCount, ...rest] = call;
  if (command !== "evalsha" && command !== "eval") return undefined;
  const name = names.get(String(sha));
  const args = rest.slice(Number(keyCount));
  if (name === "inspect" || name?.startsWith("store")) return undefined;
  // Owner, then ticket or fence: shortened, never whole.
  const [owner, second, ...others] = args;
  return `${name} o=${short(owner)} ${short(second)} ${others.join(" ")}`;
}
