// Lua script calls counted at the transport, by script: every EVALSHA (or EVAL) that an
// @upstash/redis client sends through fetch, named by its SHA-1 (fencelock's scripts by name, any
// other as "other"), per node (the request's origin) and per async scope. The quorum bench uses it
// to tell an acquire that needed a write-back (adopt.lua) from one that did not.
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import * as scripts from "../../src/redis/scripts.gen.ts";

/** Script calls sent, by script name ("acquire", "adopt", "release", ...; "other" for any other script). */
export class ScriptCalls {
  byScript: Record<string, number> = {};

  count(script: string): number {
    return this.byScript[script] ?? 0;
  }

  add(script: string): void {
    this.byScript[script] = (this.byScript[script] ?? 0) + 1;
  }
}

const scope = new AsyncLocalStorage<ScriptCalls>();
const byOrigin = new Map<string, ScriptCalls>();

/** fencelock's scripts, by the SHA-1 that EVALSHA names them with, and by their text (EVAL). */
const names = new Map<string, string>();
for (const script of Object.values(scripts)) {
  if (typeof script !== "object" || !("text" in script)) continue;
  names.set(createHash("sha1").update(script.text).digest("hex"), script.name);
  names.set(script.text, script.name);
}

/** Runs fn with every script call it makes (directly or later, in its async context) counted to calls. */
export function scriptScope<T>(calls: ScriptCalls, fn: () => T): T {
  return scope.run(calls, fn);
}

/** The calls sent so far to the node at `url` (its origin). */
export function callsTo(url: string): ScriptCalls {
  const origin = new URL(url).origin;
  let calls = byOrigin.get(origin);
  if (!calls) byOrigin.set(origin, (calls = new ScriptCalls()));
  return calls;
}

/** The scripts an Upstash REST body runs: one command, or a list of them (/pipeline). */
function scriptsIn(body: unknown): string[] {
  let parsed: unknown;
  try {
    parsed = typeof body === "string" ? JSON.parse(body) : undefined;
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const list: unknown[] = Array.isArray(parsed[0]) ? parsed : [parsed];
  return list.flatMap((command) => {
    if (!Array.isArray(command)) return [];
    const verb = String(command[0]).toLowerCase();
    if (verb !== "evalsha" && verb !== "eval" && verb !== "evalsha_ro" && verb !== "eval_ro") return [];
    return [names.get(String(command[1])) ?? "other"];
  });
}

/** Wraps globalThis.fetch (on top of any counter already installed); returns the function that restores it. */
export function installScriptCounter(): () => void {
  const original = globalThis.fetch;
  const counting: typeof fetch = (input, init) => {
    const found = scriptsIn(init?.body);
    if (found.length > 0) {
      const url = input instanceof Request ? input.url : String(input);
      const node = callsTo(url);
      const mine = scope.getStore();
      for (const name of found) {
        node.add(name);
        mine?.add(name);
      }
    }
    return original(input, init);
  };
  globalThis.fetch = counting;
  return () => {
    globalThis.fetch = original;
  };
}
