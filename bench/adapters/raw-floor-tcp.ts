import type { Redis as IORedis } from "ioredis";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import { sleep } from "../harness/timing.ts";
import { COMPARE_AND_DELETE, COMPARE_AND_EXTEND, LEASE_MS, RETRY_MS, type RawHandle } from "./raw-floor.ts";
import { untilAcquired, type Library, type LockAdapter } from "./types.ts";

type Scripted = IORedis & {
  rawRelease(key: string, token: string): Promise<number>;
  rawExtend(key: string, token: string, ms: string): Promise<number>;
};

/**
 * The floor over TCP: SET key token NX PX and a compare-and-delete script (ioredis defineCommand:
 * EVALSHA, EVAL on NOSCRIPT), on one ioredis connection per client, as the peers have.
 */
export function rawFloorTcpLibrary(endpoint: Endpoint): Library {
  return {
    id: "raw-floor-tcp",
    label: "raw SET NX PX + CAD (TCP floor)",
    transport: "tcp",
    settings: `ioredis: SET key token NX PX ${LEASE_MS}; release: compare-and-delete Lua (defineCommand: EVALSHA); ` +
      `busy: retry every ${RETRY_MS} ms; no fence, no queue, no idempotent retries`,
    connect: () => connectRawTcp(endpoint),
  };
}

async function connectRawTcp(endpoint: Endpoint): Promise<LockAdapter<RawHandle>> {
  const client = (await countedConnection(endpoint.redisUrl)) as Scripted;
  client.defineCommand("rawRelease", { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  client.defineCommand("rawExtend", { numberOfKeys: 1, lua: COMPARE_AND_EXTEND });
  const tryOnce = async (key: string): Promise<RawHandle | undefined> => {
    const token = crypto.randomUUID();
    if ((await client.set(key, token, "PX", LEASE_MS, "NX")) === "OK") return { key, token };
    await sleep(RETRY_MS);
    return undefined;
  };
  return {
    name: "raw floor (TCP)",
    exhausted: 0,
    acquire: (name: string, signal?: AbortSignal) => untilAcquired(() => tryOnce(`rawtcp:${name}`), () => undefined, signal),
    release: async (h: RawHandle) => {
      await client.rawRelease(h.key, h.token);
    },
    heartbeat: async (h: RawHandle) => {
      await client.rawExtend(h.key, h.token, String(LEASE_MS));
    },
    close: async () => {
      await client.quit();
    },
  };
}
