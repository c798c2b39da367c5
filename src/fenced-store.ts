import { LockConfigError, StaleFenceError } from "./errors.ts";
import { checkFence } from "./fence.ts";
import { checkName, escapeName } from "./keys.ts";
import { parseOptions, readOptionsSchema, storeOptionsSchema, type FencedStoreOptions } from "./options.ts";
import { runScript, type Reply } from "./redis.ts";
import * as scripts from "./scripts.gen.ts";

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
  const run = (script: scripts.LuaScript, resource: string, args: (string | number)[]) =>
    runScript(redis, script, [`${prefix}:{${escapeName(resource)}}:data`], args, { timeoutMs });

  /** Claims `fence` at the resource, and stores the value given as JSON `text` with it if any. */
  async function fenceAt(resource: string, fence: number, what: string, text: string[] = []): Promise<Reply> {
    checkName(resource, "resource name");
    checkFence(fence, what);
    const reply = await run(scripts.storeFence, resource, [fence, ttlMs, ...text]);
    // `!=`: a client may answer integers as decimal text; an accepted write must not read as stale.
    if (reply[0] != 1) throw new StaleFenceError(resource, fence, Number(reply[1]));
    return reply.slice(1);
  }

  return {
    async claim(resource, fence) {
      await fenceAt(resource, fence, "claim");
    },
    async write(resource, value, fence) {
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch {
        // a BigInt, or an object that contains itself
      }
      if (text === undefined) throw new LockConfigError("value", [`expected a JSON value without cycles, got ${typeof value}`]);
      await fenceAt(resource, fence, "write", [text]);
    },
    async read<T>(resource: string, options?: { fence?: number }) {
      const { fence } = parseOptions(readOptionsSchema, options, "read options");
      if (fence !== undefined) return decode<T>(await fenceAt(resource, fence, "read"));
      checkName(resource, "resource name");
      return decode<T>(await run(scripts.storeRead, resource, []));
    },
  };
}

function decode<T>([fence, stored]: Reply): Fenced<T> | null {
  if (typeof stored !== "string") return null;
  return { value: JSON.parse(stored.slice(2)) as T, fence: Number(fence) };
}
