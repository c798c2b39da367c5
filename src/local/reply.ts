// Redis replies as the JSON the Upstash REST protocol answers with.
/** What JSON.rawJSON returns: JSON.stringify writes its text as it is. */
interface RawJson {
  readonly rawJSON: string;
}

/** A Redis reply as JSON: what goes into `{"result": ...}`. */
type JsonReply = string | number | RawJson | null | JsonReply[];

const OK = Buffer.from("OK");

/** Node >= 21; on Node 20 an integer past 2^53 is sent as the nearest double, as JSON.parse of the digits gives. */
const rawJson = (JSON as { rawJSON?: (text: string) => RawJson }).rawJSON;

/**
 * An ioredis Buffer-mode reply, read with `stringNumbers` (integers are strings, every other string
 * a Buffer), as JSON. Strings are UTF-8 text (bad bytes U+FFFD, as on Upstash), or with base64 the
 * base64 of their bytes, but for a top-level "OK": Upstash sends that raw, and @upstash/redis
 * expects it raw only there. A bulk "OK" goes raw too; the client reads both alike.
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
