import { keyBase, lockKeyList, newToken } from "../../src/core/keys.ts";
import { RETRY_WINDOW_MS, scriptSha1 } from "../../src/redis/run-script.ts";
import * as scripts from "../../src/redis/scripts.gen.ts";
import { QUEUE_ALIVE_MS } from "../../src/waiting/backoff.ts";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import type { Library, LockAdapter } from "./types.ts";

const LEASE_MS = 10_000;
const PREFIX = "bench-tcp-bare";

interface BareLease {
  name: string;
  owner: string;
  fence: number;
}

/**
 * fencelock's two scripts sent bare through ioredis, with the keys and arguments a default
 * acquire() sends (a push waiter's ticket, a place in line kept 2 s) and no library code around
 * them: what the scripts alone cost, so the report can tell the scripts' share of a gap from the client's.
 */
export function fencelockScriptsTcpLibrary(endpoint: Endpoint): Library {
  return {
    id: "fencelock-scripts-tcp",
    label: "fencelock's scripts alone (TCP, no library code)",
    transport: "tcp",
    settings: "ioredis EVALSHA of acquire.lua and release.lua with a default acquire()'s keys and arguments; " +
      "only for the uncontended yardstick (it never waits)",
    connect: () => connectScriptsTcp(endpoint),
  };
}

async function connectScriptsTcp(endpoint: Endpoint): Promise<LockAdapter<BareLease>> {
  const client = await countedConnection(endpoint.redisUrl);
  const load = async (script: scripts.LuaScript) => {
    await client.script("LOAD", script.text);
    return scriptSha1(script);
  };
  const [acquireSha1, releaseSha1, heartbeatSha1] = await Promise.all([load(scripts.acquire), load(scripts.release), load(scripts.heartbeat)]);
  const keysOf = keyBase(PREFIX);
  const run = (sha1: string, keys: string[], args: (string | number)[]) => client.evalsha(sha1, keys.length, ...keys, ...args.map(String)) as Promise<number[]>;
  // A lock set's channel id, as the push ticket carries it.
  const lockSet = newToken();
  return {
    name: "fencelock's scripts alone (TCP)",
    exhausted: 0,
    acquire: async (name) => {
      const owner = newToken();
      const ticket = `${newToken()}.${owner}.${LEASE_MS}.${LEASE_MS + RETRY_WINDOW_MS}.${lockSet}`;
      const [held, fence = 0] = await run(acquireSha1, lockKeyList(keysOf(name)), [owner, ticket, LEASE_MS, LEASE_MS + RETRY_WINDOW_MS, QUEUE_ALIVE_MS]);
      if (held !== 1) throw new Error(`${name} was busy: the scripts-alone yardstick runs uncontended only`);
      return { name, owner, fence };
    },
    release: async ({ name, owner, fence }) => {
      await run(releaseSha1, lockKeyList(keysOf(name), fence), [owner, fence, newToken(), RETRY_WINDOW_MS]);
    },
    heartbeat: async ({ name, owner, fence }) => {
      await run(heartbeatSha1, lockKeyList(keysOf(name)), [owner, fence, LEASE_MS, LEASE_MS + RETRY_WINDOW_MS]);
    },
    close: async () => void (await client.quit()),
  };
}
