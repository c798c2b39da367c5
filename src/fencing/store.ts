// createFencedStore: values in Redis that refuse a write or claim under a stale fence.
import { LockConfigError, StaleFenceError } from "../core/errors.ts";
import { checkFence } from "../core/fence.ts";
import { checkName, nameTag, newToken } from "../core/keys.ts";
import { parseOptions, readOptionsSchema, storeOptionsSchema, type FencedStoreOptions } from "../core/options.ts";
import { messageOf, unexpectedReply } from "../redis/failures.ts";
import { RETRY_WINDOW_MS, runScript, type Reply } from "../redis/run-script.ts";
import type { RedisClient } from "../core/client.ts";
import * as scripts from "../redis/scripts.gen.ts";

/** A value and the highest fence its resource has seen (at least the fence that wrote it). */
export interface Fenced<T> {
  value: T;
  fence: number;
}

export interface FencedStore {
  /** Registers `fence` before a read-modify-write; throws StaleFenceError if a higher one was seen (see ttlMs). */
  claim(resource: string, fence: number): Promise<void>;
  /** Stores `value` (any JSON, as JSON.stringify writes it) iff `fence` is at least the highest seen; else StaleFenceError. */
  write(resource: string, value: unknown, fence: number): Promise<void>;
  /** The current value, or null when none was written. With `{ fence }`, claims first, atomically. */
  read<T = unknown>(resource: string, options?: { fence?: number }): Promise<Fenced<T> | null>;
}

/**
 * Storage that refuses writes from any holder older than one it has already seen: the half
 * of fencing that makes a lease safe when its holder pauses past its expiry.
 *
 * @example
 * const store = createFencedStore({ redis, prefix: "shop" });
 * await locks.withLock("invoice:42", async (lease) => {
 *   const current = await store.read<Invoice>("invoice:42", { fence: lease.fence }); // claim + read
 *   await store.write("invoice:42", { ...current?.value, paid: true }, lease.fence);
 * });
 */
export function createFencedStore(options: FencedStoreOptions): FencedStore {
  const { redis, prefix, timeoutMs, ttlMs = 0 } = parseOptions(storeOptionsSchema, options, "createFencedStore options");
  /**
   * Claims a checked `fence` at the resource, storing the JSON `text` if given; without a fence,
   * only reads. Each call names a write record of its own, so a late retry is told what the write was.
   */
  async function fenceAt(resource: string, fence: number | undefined, text: string[] = []): Promise<Reply> {
    checkName(resource, "resource name");
    if (fence !== undefined) await checkPrefixTtl(redis, prefix, ttlMs, timeoutMs);
    const tag = nameTag(prefix, resource);
    const keys = [`${tag}:data`, `${tag}:written:${newToken()}`];
    const reply = await runScript(redis, scripts.storeFence, keys, [fence ?? "", ttlMs, RETRY_WINDOW_MS, ...text], { timeoutMs });
    const [accepted, highest] = reply; // {1, highest, 'v:' .. value?} or {0, highest}
    // `!=`: a client may answer integers as decimal text; an accepted write must not read as stale,
    // nor a reply that is not this script's as either.
    if (reply.length < 2 || (accepted != 1 && accepted != 0)) throw unexpectedReply(scripts.storeFence);
    if (accepted != 1) throw new StaleFenceError(resource, fence ?? 0, Number(highest));
    return reply;
  }

  return {
    async claim(resource, fence) {
      await fenceAt(resource, checkFence(fence, "claim"));
    },
    async write(resource, value, fence) {
      const text = jsonText(value);
      await fenceAt(resource, checkFence(fence, "write"), [text]);
    },
    async read<T>(resource: string, options?: { fence?: number }) {
      const { fence } = parseOptions(readOptionsSchema, options, "read options");
      return decode<T>(await fenceAt(resource, fence === undefined ? undefined : checkFence(fence, "read")));
    },
  };
}

/** `value` as JSON text; LockConfigError for what JSON cannot hold. */
function jsonText(value: unknown): string {
  let text: string | undefined;
  let why = `got ${typeof value}`;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    // A BigInt, a cycle or a throwing toJSON, at any depth: its own words say which.
    why = `JSON.stringify refused it: ${messageOf(error).split("\n")[0]}`;
  }
  if (text === undefined) throw new LockConfigError("value", [`expected a JSON value without cycles or BigInts, ${why}`]);
  return text;
}

// Checks passed, per client: a store made per request costs the check once per client. Only the
// outcome is kept, never a promise, which on Workers may not be awaited from another request.
const prefixesChecked = new WeakMap<RedisClient, Set<string>>();

/**
 * Every store on a prefix must keep data as long: one that keeps it longer (or for good) would take
 * a record that expired for a shorter ttlMs as never written, and accept fences older than ones it
 * saw. The first store records its ttlMs; any other is refused before it claims or writes.
 */
async function checkPrefixTtl(redis: RedisClient, prefix: string, ttlMs: number, timeoutMs: number): Promise<void> {
  const checked = prefixesChecked.get(redis) ?? new Set<string>();
  const id = `${prefix} ${ttlMs}`;
  if (checked.has(id)) return;
  const key = `${prefix}:store-ttl`;
  const reply = await runScript(redis, scripts.storeTtl, [key], [ttlMs], { timeoutMs });
  // `Number`: a client may answer integers as decimal text.
  const kept = reply.length === 1 ? Number(reply[0]) : NaN;
  if (!Number.isSafeInteger(kept)) throw unexpectedReply(scripts.storeTtl);
  if (kept !== ttlMs) {
    throw new LockConfigError("createFencedStore options", [
      `ttlMs: ${ttlMs || "none"} differs from ${kept || "none"}, the stores' on prefix "${prefix}" (key ${key}); ` +
      "one that keeps data longer would take their expired records as never written. Use one ttlMs per prefix",
    ]);
  }
  prefixesChecked.set(redis, checked.add(id));
}

function decode<T>([, fence, stored]: Reply): Fenced<T> | null {
  if (typeof stored !== "string") return null;
  return { value: JSON.parse(stored.slice(2)) as T, fence: Number(fence) };
}
