// Why Redis could not be used, in words for the HTTP client or the developer.
import { RedisUnavailableError } from "./errors.ts";

/** What to do about the usual reasons a Redis cannot be used, keyed by error code or reply prefix. */
const HINTS: ReadonlyArray<[RegExp, string]> = [
  [/^ECONNREFUSED$/, "nothing accepts connections there: start redis-server, or check the host and port"],
  [/^(ENOTFOUND|EAI_AGAIN)$/, "the host name does not resolve: check the host in the Redis URL"],
  [/^NOAUTH/, "this Redis requires a password: pass redis://:<password>@<host>:<port>"],
  [/^WRONGPASS/, "the user name or password in the Redis URL is wrong"],
];

/**
 * Why a connection could not be opened. `cause` is the last error ioredis reported: connect()
 * itself only rejects with "Connection is closed.", whatever went wrong.
 */
export function startupFailure(where: string, cause: unknown): RedisUnavailableError {
  const message = cause instanceof Error ? cause.message : String(cause);
  const code: unknown = cause instanceof Error ? Reflect.get(cause, "code") : undefined;
  // Socket errors carry a code; Redis' error replies (NOAUTH, WRONGPASS) start with theirs.
  const hint = HINTS.find(([pattern]) => pattern.test(typeof code === "string" ? code : message))?.[1];
  return new RedisUnavailableError(`Redis is unavailable at ${where}: ${message}${hint ? ` (${hint})` : ""}`, {
    cause,
  });
}

/** A peer that accepted the connection but did not answer the ready check in time. */
export function noReplyFailure(where: string, waitedMs: number): RedisUnavailableError {
  return new RedisUnavailableError(
    `Redis is unavailable at ${where}: connected, but no reply within ${waitedMs} ms ` +
      "(is it a Redis server, and running rather than paused or busy with a long script?)",
  );
}

export const REDIS_URL_SHAPE =
  "must look like redis://[[user]:password@]host:port[/db], rediss://... (TLS) or a Unix socket path";

/** Whether ioredis reads `url` as meant: it takes "not a url" as a socket path, as it does an absolute path. */
export function isRedisUrl(url: string): boolean {
  return url.startsWith("/") || /^rediss?:\/\//i.test(url);
}

/** ioredis' own words for "no connection", which name its options rather than what happened. */
const NOT_SENT = /^(Stream isn't writeable|Connection is closed\.)/;

/** A non-reply failure of a request (connection lost or not there), in words for the HTTP client. */
export function unavailable(error: unknown): RedisUnavailableError {
  if (error instanceof RedisUnavailableError) return error;
  return new RedisUnavailableError(`Redis is unavailable: ${reasonOf(error)}`, { cause: error });
}

function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Written, then the connection dropped; commands are never resent, so it may or may not have run.
  if (error.name === "MaxRetriesPerRequestError") {
    return "the connection to Redis was lost before it answered (the command may have run)";
  }
  if (NOT_SENT.test(error.message)) return "not connected to Redis, reconnecting (the command did not run)";
  return error.message;
}
