// The request target split into path and query, without URL parsing.
import { HttpError } from "./errors.ts";

/** Where a request goes: its path, still percent-encoded, and its query parameters. */
export interface RequestTarget {
  /** Without trailing slashes, except the root "/"; "//" becomes "", an empty command name. */
  path: string;
  query: URLSearchParams;
}

/** A forward proxy sends the absolute form `http://host/path`; only its path matters here. */
const SCHEME_AND_AUTHORITY = /^[a-z][a-z\d+.-]*:\/\/[^/?#]*/i;

/**
 * Splits the raw request target at "?" without URL parsing: `new URL("//get/del/k", base)`
 * would read "get" as a host and run DEL, and would also resolve dot segments, which here are
 * arguments like any other segment.
 */
export function parseTarget(raw: string): RequestTarget {
  // "http://host?x" has an empty path, which means the root.
  const target = raw.replace(SCHEME_AND_AUTHORITY, "").replace(/^(?=\?|$)/, "/");
  const queryAt = target.indexOf("?");
  const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
  if (!rawPath.startsWith("/")) throw new HttpError(400, "ERR the request target must be a path such as /get/key");
  const query = new URLSearchParams(queryAt === -1 ? "" : target.slice(queryAt + 1));
  return { path: rawPath === "/" ? "/" : withoutTrailingSlashes(rawPath), query };
}

/** A loop, not /\/+$/: that pattern backtracks from every slash of a long inner run (quadratic). */
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  return path.slice(0, end);
}
