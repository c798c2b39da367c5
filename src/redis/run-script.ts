// Runs a Lua script on any RedisClient: EVALSHA first, a timeout, and errors that say what to fix.
import { LockConfigError } from "../core/errors.ts";
import { sha1Hex } from "../core/sha1.ts";
import type { RedisClient } from "../core/client.ts";
import { messageOf, RequestTimeout, unavailable, unexpectedReply } from "./failures.ts";
import type { LuaScript } from "./scripts.gen.ts";

interface RunOptions {
  readonly timeoutMs: number;
  /** A string (an owner token) that must never appear in an error message. */
  readonly secret?: string;
}

/**
 * How long a retry of a request may still come (the client's own retries, after a reply was lost):
 * a lock's last fence outlives its lease by this, and a release's or a store write's record of
 * itself lives this long.
 */
export const RETRY_WINDOW_MS = 60_000;

/** A script's reply: our scripts answer flat arrays of integers and strings. */
export type Reply = readonly (number | string)[];

const digests = new Map<LuaScript, string>();

/**
 * The SHA-1 EVALSHA names a script by, computed once per isolate: shipped, the digests would cost
 * ~300 gzip bytes (a test checks them against SCRIPT LOAD).
 */
export function scriptSha1(script: LuaScript): string {
  let digest = digests.get(script);
  if (!digest) digests.set(script, (digest = sha1Hex(script.text)));
  return digest;
}

/** Runs a script (as runScriptThen), resolving with its reply as it is. */
export function runScript(redis: RedisClient, script: LuaScript, keys: string[], values: readonly (string | number)[], options: RunOptions): Promise<Reply> {
  return runScriptThen(redis, script, keys, values, options, (reply) => reply);
}

/**
 * Runs a script: EVALSHA first, EVAL only when the server answers NOSCRIPT (or for a script sent
 * asText). Numbers go as decimal text. Resolves with what `read` makes of the reply, or rejects
 * with what it throws. One promise and callbacks rather than nested async functions or a `then`
 * more: where async hooks are on (AsyncLocalStorage, as tracing agents and frameworks use), every
 * promise costs, and a call made about ten.
 */
export function runScriptThen<T>(
  redis: RedisClient,
  script: LuaScript,
  keys: string[],
  values: readonly (string | number)[],
  { timeoutMs, secret }: RunOptions,
  read: (reply: Reply) => T,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // A throw here rejects with that error as it is, before any timer starts.
    checkConfigured(redis);
    const args = values.map(String);
    // The client's own retries go on in the background after the timeout: their result is ignored,
    // and giveBackAfter() learns when they are over. Made only on a timeout, to cost nothing otherwise.
    let ended: (() => void) | undefined;
    const timer = setTimeout(() => {
      const error = unavailable(new RequestTimeout(), script, timeoutMs, secret);
      stillOut.set(error, new Promise<void>((resolve) => (ended = resolve)));
      reject(error);
    }, timeoutMs);
    const answered = (reply: unknown) => {
      clearTimeout(timer);
      ended?.();
      // Our scripts answer flat arrays of integers and strings.
      if (!Array.isArray(reply) || !reply.every(isScalar)) return reject(unexpectedReply(script, reply));
      try {
        resolve(read(reply));
      } catch (error) {
        reject(error);
      }
    };
    // One EVAL after a NOSCRIPT; past the timeout the script has not run, and need not: the caller has given up.
    let evalSent = false;
    const failed = (error: unknown) => {
      if (!evalSent && !ended && messageOf(error).includes("NOSCRIPT")) {
        evalSent = true;
        return send(() => redis.eval(script.text, keys, args), answered, failed);
      }
      clearTimeout(timer);
      ended?.();
      // An adapter's LockConfigError (a client not connected) says what to fix: it goes as it is.
      reject(error instanceof LockConfigError ? error : unavailable(error, script, timeoutMs, secret));
    };
    send(() => (script.asText ? redis.eval(script.text, keys, args) : redis.evalsha(scriptSha1(script), keys, args)), answered, failed);
  });
}

// Made once, not per reply.
const isScalar = (v: unknown) => typeof v === "number" || typeof v === "string";

/** The end of the request behind each call that timed out, by the error the call rejected with. */
const stillOut = new WeakMap<object, Promise<void>>();

/**
 * Gives back what a failed call's request may have taken: now, and for a call that timed out once
 * more when its request has ended, as the client may still retry it then. Now frees the lock at
 * once when only the reply was late; the second catches a request that lands after the first.
 */
export function giveBackAfter(error: unknown, giveBack: () => Promise<unknown>): Promise<unknown> {
  // A call never sent took nothing.
  if (notSent.has(error as object)) return Promise.resolve();
  const now = giveBack();
  const out = requestEnd(error);
  return out ? Promise.all([now, out.then(giveBack)]) : now;
}

const notSent = new WeakSet<object>();

/** Marks the error of a call that was refused before anything was sent. */
export function unsent(error: Error): Error {
  notSent.add(error);
  return error;
}

/** For a call that timed out, the end of its request, which the client may still be sending. */
export function requestEnd(error: unknown): Promise<void> | undefined {
  return typeof error == "object" && error ? stillOut.get(error) : undefined;
}

/** Sends a request and hands on its outcome; a client that throws at once fails as one that rejects. */
function send(request: () => unknown, answered: (reply: unknown) => void, failed: (error: unknown) => void): void {
  let sent: unknown;
  try {
    sent = request();
  } catch (error) {
    return failed(error);
  }
  Promise.resolve(sent).then(answered, failed);
}

/**
 * @upstash/redis builds a client without URL or token (Redis.fromEnv() with the variables unset),
 * and its calls then retry for seconds before failing as if the network were down.
 */
function checkConfigured(redis: RedisClient): void {
  // hasCredentials: false without a token too; older clients lack it, and have baseUrl.
  const http = (redis as { client?: { baseUrl?: unknown; hasCredentials?: unknown } }).client;
  if (http?.baseUrl === "" || http?.hasCredentials === false) {
    throw new LockConfigError("Redis client", [
      "it has no URL or token. Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (what Redis.fromEnv() reads), or pass new Redis({ url, token })",
    ]);
  }
}

/**
 * A lock script's reply, typed as five integers so that it destructures without defaults: no
 * script answers more, and integers() lets through only as many as the script always answers.
 */
export type Integers = [number, number, number, number, number];

/** The reply of a script that answers integers only, as many as it always does. */
export function integers(reply: Reply, script: LuaScript): Integers {
  if (reply.length === script.replyLength && reply.every(Number.isSafeInteger)) return reply as Integers;
  throw unexpectedReply(script, reply);
}
