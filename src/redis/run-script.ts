// Runs a Lua script on any RedisClient: EVALSHA first, a timeout, and errors that say what to fix.
import { LockConfigError, LockUnavailableError } from "../core/errors.ts";
import { sha1Hex } from "../core/sha1.ts";
import type { RedisClient } from "../core/client.ts";
import type { LuaScript } from "./scripts.gen.ts";

export interface RunOptions {
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
  const now = giveBack();
  const out = typeof error == "object" && error && stillOut.get(error);
  return out ? Promise.all([now, out.then(giveBack)]) : now;
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

class RequestTimeout extends Error {}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function unavailable(error: unknown, script: LuaScript, timeoutMs?: number, secret?: string) {
  // Dropped: the command @upstash/redis appends (owner token included), credentials in a URL (a
  // word's `//` to its last `@`), and words of 300+ characters, where `\S+@` would take quadratic time.
  // "1000ms", no space: no hint below then reads a timeoutMs of 401 as an HTTP status.
  let reason = error instanceof RequestTimeout
    ? `no answer within ${timeoutMs}ms, timeoutMs`
    : messageOf(error).replace(/,? ?command was:[\s\S]*$/, "").replace(/\S{300,}/g, "").replace(/\/\/\S+@/g, "//");
  if (secret) reason = reason.split(secret).join("<redacted>");
  // Cluster and connection hints first: a slot or a port may read as a 401 below.
  const hint = /redirections|TRYAGAIN|CLUSTERDOWN/.test(reason)
    ? "the Cluster was moving a slot or failing over: retry, or let the Cluster client retry longer"
    : /\b(MOVED|ASK) \d/.test(reason)
    ? "this Redis is a Cluster node: use fromIoredis(new Cluster()) or fromNodeRedis(createCluster())"
    : /ECONNREFUSED|Connection is closed|client is closed/.test(reason)
    ? "check that Redis is running and reachable at its host and port"
    : /unauthori[sz]ed|WRONGPASS|\b401\b/i.test(reason)
    ? "the token was refused: check UPSTASH_REDIS_REST_TOKEN"
    : /NOPERM/.test(reason)
    ? "a read-only token may not run scripts: use the standard one"
    : /WRONGTYPE/.test(reason)
    ? "a key under this prefix is not fencelock's: use another prefix"
    : /limit exceeded/i.test(reason)
    ? "the database's request quota is used up: see its plan in the Upstash console"
    : /size|large/i.test(reason)
    ? "the value is too large"
    : "check the Redis URL, token and network";
  return new LockUnavailableError(`Redis request for ${script.name} failed (${reason}); ${hint}.`);
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

/**
 * A reply that is not the script's, shown without words over 16 characters (an owner token has 32).
 * Integers as text are what ioredis' stringNumbers and node-redis' type mappings give, and the adapters undo.
 */
export function unexpectedReply(script: LuaScript, reply?: unknown): LockUnavailableError {
  const array = Array.isArray(reply);
  let shown = "";
  let text: boolean | undefined;
  try {
    if (reply !== undefined) shown = ` ${array ? `[${reply}]` : reply}`.replace(/\w{17,}/g, "…").slice(0, 99);
    text = array && reply.length > 0 && reply.every((v) => typeof v != "number" && /^-?\d+$/.test(v));
  } catch {
    // A value without toString (a null-prototype object): not shown.
  }
  // The acquire loop, and a quorum attempt, give back what the attempt may have taken.
  return new LockUnavailableError(
    `Redis request for ${script.name} failed (an unexpected reply${shown}); ${
      text ? "integers came as text: use fromIoredis or fromNodeRedis" : "check the Redis URL, token and network"
    }${script.name == "acquire" ? "; a lock it took is given back" : ""}.`,
  );
}
