// Lock scripts on one Redis: the keys of a lock name, typed integer replies, owners kept out of errors.
import type { LockState } from "../core/backend.ts";
import type { RedisClient } from "../core/client.ts";
import { lockKeyList, type KeyBase } from "../core/keys.ts";
import { integers, runScriptThen, type Integers } from "./run-script.ts";
import type { LuaScript } from "./scripts.gen.ts";

export interface NodeConfig {
  readonly redis: RedisClient;
  readonly keyBase: KeyBase;
  readonly timeoutMs: number;
}

/**
 * Runs a lock script on the keys of lock `name` (and of the lease with `fence`, when given),
 * keeping `owner` out of any error message.
 */
export type Run = (script: LuaScript, name: string, args: (string | number)[], owner: string, fence?: number) => Promise<Integers>;

/** As Run, handing the reply to `read` in the same step: one promise less a call, for the reason runScriptThen gives. */
export type RunAndRead = <T>(
  script: LuaScript, name: string, args: (string | number)[], owner: string, fence: number | undefined, read: (reply: Integers) => T,
) => Promise<T>;

/** Runs lock scripts on one Redis. */
export function nodeRunner(config: NodeConfig): Run {
  const runAndRead = nodeReader(config);
  return (script, name, args, owner, fence) => runAndRead(script, name, args, owner, fence, (reply) => reply);
}

/** Runs lock scripts on one Redis, each reply read by the caller's `read`. */
export function nodeReader({ redis, keyBase, timeoutMs }: NodeConfig): RunAndRead {
  // The last lock's four keys, kept: an acquire and its release send the same ones. Each call
  // gets a copy, so a client that keeps or changes its list cannot change the next call's.
  let base: string | undefined;
  let keys: string[] = [];
  return (script, name, args, owner, fence, read) => {
    const at = keyBase(name);
    if (at !== base) keys = lockKeyList((base = at));
    const sent = fence ? [...keys, `${at}:releases:${fence}`] : [...keys];
    return runScriptThen(redis, script, sent, args, { timeoutMs, secret: owner }, (reply) => read(integers(reply, script)));
  };
}

/** One node's answer to inspect.lua, as a LockState. */
export function stateOf([held, fence, ttl, holds, waiters]: Integers): LockState {
  return { held: held === 1, fence: fence > 0 ? fence : null, remainingMs: Math.max(0, ttl), holds, waiters };
}
