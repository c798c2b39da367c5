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

/** A URL ioredis would misread (it takes "not a url" as a socket path): refused before connecting. */
export function checkRedisUrl(url: string): void {
  // ioredis also takes an absolute path as a Unix socket.
  if (url.startsWith("/") || /^rediss?:\/\//i.test(url)) return;
  throw new RedisUnavailableError(
    "the Redis URL must look like redis://[[user]:password@]host:port[/db], rediss://... (TLS) or a Unix socket path",
  );
}
