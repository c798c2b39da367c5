// Why a script call failed, said so the user knows what to fix: the hint is picked from the error's text.
import { LockConfigError, LockUnavailableError } from "../core/errors.ts";
import type { LuaScript } from "./scripts.gen.ts";

/** Stands for "no answer within timeoutMs" until unavailable() words it. */
export class RequestTimeout extends Error {}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A failed call as a LockUnavailableError: its reason without secrets, and a hint at what to fix.
 * store-fence.lua's own refusal of a fence is bad input, not an outage: a LockConfigError.
 */
export function unavailable(error: unknown, script: LuaScript, timeoutMs?: number, secret?: string) {
  // Dropped: the command @upstash/redis appends (owner token included), credentials in a URL (a
  // word's `//` to its last `@`), and words of 300+ characters, where `\S+@` would take quadratic time.
  // "1000ms", no space: no hint below then reads a timeoutMs of 401 as an HTTP status.
  let reason = error instanceof RequestTimeout
    ? `no answer within ${timeoutMs}ms, timeoutMs`
    : messageOf(error).replace(/,? ?command was:[\s\S]*$/, "").replace(/\S{300,}/g, "").replace(/\/\/\S+@/g, "//");
  // A header value fetch refused is quoted (a token with a line break): it goes, with everything
  // before it, found by index, as a pattern would take quadratic time on many quotes.
  const header = reason.lastIndexOf('" is an invalid header');
  if (header >= 0) reason = `a header value${reason.slice(header + 1)}`;
  if (secret) reason = reason.split(secret).join("<redacted>");
  // store-fence.lua's own refusal, which no retry mends.
  if (reason.includes("fencelock: malformed fence")) {
    return new LockConfigError("fence", ["over 70 min ahead of the store Redis' clock: forged, or the lock Redis' clock is far ahead (check both)"]);
  }
  return new LockUnavailableError(`Redis request for ${script.name} failed (${reason}); ${hintFor(reason)}.`);
}

// The first pattern the reason matches picks the hint. Cluster and connection ones come first: a
// slot or a port may read as a 401 below.
const HINTS: readonly (readonly [RegExp, string])[] = [
  [/redirections|TRYAGAIN|CLUSTERDOWN/, "the Cluster was moving a slot or failing over: retry, or let the Cluster client retry longer"],
  [/\b(MOVED|ASK) \d/, "this Redis is a Cluster node: use fromIoredis(new Cluster()) or fromNodeRedis(createCluster())"],
  [/ECONNREFUSED|Connection is closed|client is closed/, "check that Redis is running and reachable at its host and port"],
  // Node says "… is an invalid header value", workerd "Invalid header value.".
  [/invalid header/i, "the token has a line break or control character"],
  // A primary demoted by a failover answers READONLY until the client finds the new one.
  [/READONLY|MASTERDOWN/, "this Redis is a replica (a failover?): connect to the primary, or retry"],
  [/\bBUSY\b|LOADING/, "Redis is busy or loading: retry"],
  [/NOREPLICAS|MISCONF/, "Redis refuses writes: check its replicas (min-replicas-to-write) or disk"],
  // Upstash answers WRONGPASS over REST too.
  [/unauthori[sz]ed|WRONGPASS|NOAUTH|\b401\b/i, "the token was refused: check UPSTASH_REDIS_REST_TOKEN (over TCP: the Redis URL's password)"],
  // Upstash's read-only token and a Redis ACL user answer so (Redis 7, the second, for a command a script runs).
  [/NOPERM|can't run this command/, "this token or user may not run scripts: use Upstash's standard token, not the read-only one (an ACL user needs ~prefix:* +eval +evalsha +@read +@write +time)"],
  [/WRONGTYPE/, "a key under this prefix is not fencelock's: use another prefix"],
  [/\bOOM\b|capacity quota/, "Redis is full: free memory, or raise maxmemory or the plan's size"],
  [/limit exceeded/i, "the database's request quota is used up: see its plan in the Upstash console"],
  [/size|large/i, "the value is too large"],
];

function hintFor(reason: string): string {
  return HINTS.find(([pattern]) => pattern.test(reason))?.[1] ?? "check the Redis URL, token and network";
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
