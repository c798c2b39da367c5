// Redis commands as the REST protocol sends them: JSON arrays or path segments, checked.
import { HttpError } from "./errors.ts";

/** One Redis command as sent to ioredis: the name, then every argument as text or raw bytes. */
export type Command = readonly [name: string, ...args: Array<string | Buffer>];

/**
 * Turns one command array (`["SET", "k", 1]`, parsed JSON or the segments of a path) into a
 * Command; numbers become their decimal text.
 */
export function parseCommand(value: unknown): Command {
  if (!Array.isArray(value) || value.length === 0) {
    throw new HttpError(400, "ERR a command must be a non-empty JSON array like [\"GET\", \"key\"]");
  }
  const [first, ...args] = value.map((item: unknown, position) => toArgument(item, position));
  const name = first?.toString();
  if (!name) throw new HttpError(400, "ERR empty command name");
  return [name, ...args];
}

/** A pipeline or transaction body: a non-empty JSON array of command arrays. */
export function parseCommandList(value: unknown): Command[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new HttpError(400, "ERR the body must be a non-empty JSON array of command arrays");
  }
  return value.map(parseCommand);
}

function toArgument(value: unknown, position: number): string | Buffer {
  if (typeof value === "string" || Buffer.isBuffer(value)) return value;
  if (typeof value === "number" && Number.isFinite(value)) return numberText(value);
  if (typeof value === "boolean") return String(value);
  // Named by kind, never echoed: the value can be megabytes, or nested too deep to serialize.
  throw new HttpError(400, `ERR element ${position} of the command is ${kindOf(value)}: use strings, numbers or booleans`);
}

function kindOf(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Decimal text, never exponent notation (String(1e21) is "1e+21", which Redis rejects). */
function numberText(value: number): string {
  if (Number.isInteger(value)) return BigInt(value).toString();
  return String(value);
}
