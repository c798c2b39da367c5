// startLocalUpstash()'s options: checked once, defaults filled in, the caller's object untouched.
import * as z from "zod/mini";
import { describeIssue, ms } from "../core/options.ts";
import { LocalUpstashError } from "./errors.ts";
import { isRedisUrl, REDIS_URL_SHAPE } from "./redis-failure.ts";

const port = z.number("expected a port number").check(
  z.int("expected a whole port number"),
  z.minimum(0, "expected 0 (any free port) to 65535"),
  z.maximum(65_535, "expected 0 (any free port) to 65535"),
);

const count = z.number("expected a number").check(
  z.int("expected a whole number"),
  z.minimum(1, "expected at least 1"),
  z.maximum(1_000_000, "expected at most 1000000"),
);

/**
 * The caps of a development server. A client's fetch pool keeps one socket per concurrent
 * request and a lock set one stream, so these leave room for load tests while the sockets and
 * the Redis connection each stream holds stay within a process's usual file limit.
 */
export const LIMIT_DEFAULTS = {
  maxConnections: 1_024,
  maxStreams: 256,
  // A client sends its headers at once; Node's own 60 s (checked every 30 s) let a silent socket stay 90 s.
  headersTimeoutMs: 10_000,
  // Time enough to send the largest body (10 MB) over a slow network.
  requestTimeoutMs: 30_000,
} as const;

/**
 * Strict: a misspelled `token` would otherwise start a server with a random one, and every
 * client given the intended token would be refused with 401.
 */
const localUpstashSchema = z.strictObject({
  redisUrl: z.optional(z.string("expected a Redis URL such as redis://127.0.0.1:6379").check(z.refine(isRedisUrl, REDIS_URL_SHAPE))),
  port: z._default(port, 0),
  host: z._default(z.string("expected a host name or address").check(z.minLength(1, "expected a host name or address")), "127.0.0.1"),
  // A client sends "Authorization: Bearer <token>": a token that is empty, or has whitespace or
  // characters a header cannot carry, could never be sent, and every request would be refused.
  token: z.optional(z.string("expected a string").check(z.regex(/^[\x21-\x7e]+$/, "expected one or more visible ASCII characters (no spaces)"))),
  allowAdminCommands: z._default(z.boolean("expected true or false"), false),
  maxConnections: z._default(count, LIMIT_DEFAULTS.maxConnections),
  maxStreams: z._default(count, LIMIT_DEFAULTS.maxStreams),
  headersTimeoutMs: z._default(ms(100, 600_000), LIMIT_DEFAULTS.headersTimeoutMs),
  requestTimeoutMs: z._default(ms(100, 3_600_000), LIMIT_DEFAULTS.requestTimeoutMs),
}, "expected an options object").check(
  // Node refuses to start a server whose headers may take longer than the whole request.
  z.refine((options) => options.headersTimeoutMs <= options.requestTimeoutMs, {
    error: (issue) => `must be at most requestTimeoutMs (${(issue.input as CheckedLocalOptions).requestTimeoutMs})`,
    path: ["headersTimeoutMs"],
  }),
);

export type CheckedLocalOptions = z.output<typeof localUpstashSchema>;

/** Checks startLocalUpstash()'s options before anything starts; the caller's object is not changed. */
export function checkLocalOptions(options: unknown): CheckedLocalOptions {
  const result = z.safeParse(localUpstashSchema, options ?? {});
  if (result.success) return result.data;
  throw new LocalUpstashError("BAD_OPTIONS", `startLocalUpstash: ${result.error.issues.map(describeIssue).join("; ")}`);
}
