// Lock and resource names, the Redis keys they map to, and random tokens.
import { LockConfigError } from "./errors.ts";

/** Longest lock or resource name accepted, in UTF-16 code units. */
const MAX_NAME_LENGTH = 512;

/** Throws LockConfigError unless `name` is a usable lock or resource name. */
export function checkName(name: unknown, what = "lock name"): string {
  if (typeof name !== "string") {
    throw new LockConfigError(what, [`expected a string, got ${typeof name}`]);
  }
  if (name.length === 0) throw new LockConfigError(what, ["must not be empty"]);
  if (name.length > MAX_NAME_LENGTH) {
    throw new LockConfigError(what, [`${name.length} characters is over the limit of ${MAX_NAME_LENGTH}`]);
  }
  // A lone surrogate cannot be encoded as UTF-8: two different names would reach
  // Redis as the same bytes (U+FFFD), so they are refused rather than merged.
  if (!name.isWellFormed()) {
    throw new LockConfigError(what, ["contains an unpaired UTF-16 surrogate"]);
  }
  return name;
}

/**
 * How every key of one name (a lock's, a fenced resource's) begins: `prefix:{name}`, so that a
 * script's keys all hash to one cluster slot. Escaping `%`, `{` and `}` keeps a name inside the
 * hash tag, and distinct names apart.
 */
export function nameTag(prefix: string, name: string): string {
  return `${prefix}:{${escapeName(name)}}`;
}

// encodeURIComponent of these three is exactly %25, %7B and %7D.
const escapeName = (name: string) => name.replace(/[%{}]/g, encodeURIComponent);

/** Where the keys of a lock name begin, as a lock set places them. */
export type KeyBase = (name: string) => string;

/**
 * A lock set's key base: `prefix:{name}`, or with `hashTag`, `prefix:{tag}:name`, which puts the
 * lock in the Cluster slot of the caller's keys tagged `{tag}`. The name stays escaped, so names
 * still cannot reach each other's keys; the tag goes in as it is, or the slot would change.
 */
export function keyBase(prefix: string, hashTag?: (name: string) => string): KeyBase {
  if (!hashTag) {
    // An acquire, its attempts and its release ask for one name's keys again and again: the last is kept.
    let last: string | undefined;
    let base = "";
    return (name) => {
      if (name !== last) [base, last] = [nameTag(prefix, name), name];
      return base;
    };
  }
  return (name) => `${prefix}:{${checkHashTag(hashTag(name), name)}}:${escapeName(name)}`;
}

function checkHashTag(tag: unknown, name: string): string {
  // Redis's tag ends at the first "}", and an empty one hashes the whole key instead. An unusable
  // string is the name's to fix (a guard answers 400 to the request that sent it); no string, hashTag's.
  const text = typeof tag == "string";
  if (!text || !/^[^{}]{1,512}$/.test(tag) || !tag.isWellFormed()) {
    throw new LockConfigError(text ? "lock name" : "hashTag", [
      `hashTag returned ${text ? JSON.stringify(tag.slice(0, 40)) : typeof tag} for "${name}": expected 1-512 characters without { or }, such as "user:42" for keys tagged {user:42}`,
    ]);
  }
  return tag;
}

/**
 * The keys of the lock whose keys begin with `base`, in the order the scripts take them as KEYS:
 * what every script call sends, built without the object and its Object.values copy.
 */
export function lockKeyList(base: string, fence?: number): string[] {
  const keys = [`${base}:lock`, `${base}:fence`, `${base}:queue`, `${base}:alive`];
  if (fence) keys.push(`${base}:releases:${fence}`);
  return keys;
}

// The hex digits' character codes, decoded in one call: a string built a byte at a time made
// a throwaway string per byte.
const DIGITS = new TextEncoder().encode("0123456789abcdef");

/** Lowercase hex of some bytes: the pool tokens are cut from. */
function toHex(bytes: Uint8Array): string {
  const codes = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < codes.length; i++) codes[i] = DIGITS[(bytes[i >> 1]! >> (i & 1 ? 0 : 4)) & 15]!;
  return new TextDecoder().decode(codes);
}

// Random bytes are drawn and turned to hex a pool at a time (one Web Crypto call per 256 tokens,
// on a path that mints three per acquire and release); a token is a slice of it, ~3× cheaper
// than its own hex. Each byte goes into one token only.
const pool = new Uint8Array(4096);
let hex = "";
let drawn = 0;

/** Owner tokens and request ids: 128 random bits from Web Crypto, as hex. */
export function newToken(): string {
  if (drawn >= hex.length) {
    hex = toHex(crypto.getRandomValues(pool));
    drawn = 0;
  }
  return hex.slice(drawn, (drawn += 32));
}
