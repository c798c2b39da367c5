import { Redis } from "@upstash/redis";
import type { Endpoint } from "../harness/server.ts";
import { sleep } from "../harness/timing.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

export const LEASE_MS = 10_000;
export const RETRY_MS = 50;
export const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`;
export const COMPARE_AND_EXTEND = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`;

/** A raw floor's lock: its key, and the token only its holder knows. */
export interface RawHandle {
  key: string;
  token: string;
}

/** The floor: SET key token NX PX, and compare-and-delete by EVALSHA, through @upstash/redis. */
export function rawFloorLibrary(endpoint: Endpoint): Library {
  return {
    id: "raw-floor",
    label: "raw SET NX PX + CAD (floor)",
    transport: "http",
    settings: `SET key token NX PX ${LEASE_MS}; release: compare-and-delete Lua (EVALSHA via createScript); ` +
      `busy: retry every ${RETRY_MS} ms; no fence, no reentrancy, no idempotent retries`,
    connect: async () => connectRaw(endpoint),
  };
}

function connectRaw(endpoint: Endpoint): LockAdapter<RawHandle> {
  const redis = new Redis({ url: endpoint.url, token: endpoint.token });
  const release = redis.createScript<number>(COMPARE_AND_DELETE);
  const extend = redis.createScript<number>(COMPARE_AND_EXTEND);
  const tryOnce = async (key: string): Promise<RawHandle | undefined> => {
    const token = crypto.randomUUID();
    const reply = await redis.set(key, token, { nx: true, px: LEASE_MS });
    if (reply === "OK") return { key, token };
    await sleep(RETRY_MS);
    return undefined;
  };
  return {
    name: "raw floor",
    exhausted: 0,
    acquire: (name: string, signal?: AbortSignal) => untilAcquired(() => tryOnce(`raw:${name}`), () => undefined, signal),
    release: async (h: RawHandle) => {
      await release.exec([h.key], [h.token]);
    },
    heartbeat: async (h: RawHandle) => {
      await extend.exec([h.key], [h.token, String(LEASE_MS)]);
    },
    close: async () => undefined,
  };
}
