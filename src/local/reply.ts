/** What JSON.rawJSON returns: JSON.stringify writes its text as it is. */
interface RawJson {
  readonly rawJSON: string;
}

/** A Redis reply as JSON: what goes into `{"result": ...}`. */
export type JsonReply = string | number | RawJson | null | JsonReply[];

const OK = Buffer.from("OK");

/** Node >= 21; on Node 20 an integer past 2^53 is sent as the nearest double, as JSON.parse of the digits gives. */
const rawJson = (JSON as { rawJSON?: (text: string) => RawJson }).rawJSON;

/**
 * Converts an ioredis Buffer-mode reply, read with `stringNumbers` (integers are strings, every
 * other string is a Buffer), to JSON.
 *
 * With base64, every string at every depth is base64 of its exact bytes, except a top-level "OK":
 * Upstash sends that one raw and @upstash/redis only special-cases it at the top level, while a
 * raw "OK" one level down would be base64-decoded to garbage. Status and bulk replies are both
 * Buffers here, so a top-level bulk "OK" is sent raw too; the client decodes both forms alike.
 * Without base64, strings are UTF-8 text (invalid bytes become U+FFFD, as on Upstash).
 */
export function toJsonReply(reply: unknown, base64: boolean): JsonReply {
  if (base64 && Buffer.isBuffer(reply) && reply.equals(OK)) return "OK";
  return convert(reply, base64);
}

function convert(reply: unknown, base64: boolean): JsonReply {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === "string") return integer(reply);
  if (Array.isArray(reply)) return reply.map((item: unknown) => convert(item, base64));
  // An error nested in an array (a Lua table holding redis.error_reply) has no JSON slot of its
  // own; its message travels as a string so the client reads it like any other element.
  const bytes = reply instanceof Error ? Buffer.from(reply.message) : toBuffer(reply);
  return base64 ? bytes.toString("base64") : bytes.toString("utf8");
}

/** Upstash sends an integer's exact digits; a client with a big-integer JSON parser reads them all. */
function integer(digits: string): number | RawJson {
  const value = Number(digits);
  return Number.isSafeInteger(value) || !rawJson ? value : rawJson(digits);
}

function toBuffer(reply: unknown): Buffer {
  if (Buffer.isBuffer(reply)) return reply;
  throw new TypeError(`unexpected Redis reply of type ${typeof reply}`);
}
