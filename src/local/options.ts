import * as z from "zod/mini";
import { describeIssue } from "../options.ts";
import { LocalUpstashError } from "./errors.ts";
import { isRedisUrl, REDIS_URL_SHAPE } from "./redis-failure.ts";
import type { LocalUpstashOptions } from "./index.ts";

const port = z.number("expected a port number").check(
  z.int("expected a whole port number"),
  z.minimum(0, "expected 0 (any free port) to 65535"),
  z.maximum(65_535, "expected 0 (any free port) to 65535"),
);

/**
 * startLocalUpstash()'s options. Strict: a misspelled `token` would otherwise start a server with
 * a random one, and every client given the intended token would be refused with 401.
 */
const localUpstashSchema = z.strictObject({
  redisUrl: z.optional(z.string("expected a Redis URL such as redis://127.0.0.1:6379").check(z.refine(isRedisUrl, REDIS_URL_SHAPE))),
  port: z.optional(port),
  host: z.optional(z.string("expected a host name or address").check(z.minLength(1, "expected a host name or address"))),
  // A client sends "Authorization: Bearer <token>": a token that is empty, or has whitespace or
  // characters a header cannot carry, could never be sent, and every request would be refused.
  token: z.optional(z.string("expected a string").check(z.regex(/^[\x21-\x7e]+$/, "expected one or more visible ASCII characters (no spaces)"))),
}, "expected an options object");

/** Checks startLocalUpstash()'s options before anything starts; the caller's object is not changed. */
export function checkLocalOptions(options: unknown): LocalUpstashOptions {
  const result = z.safeParse(localUpstashSchema, options ?? {});
  if (result.success) return result.data;
  throw new LocalUpstashError("BAD_OPTIONS", `startLocalUpstash: ${result.error.issues.map(describeIssue).join("; ")}`);
}
