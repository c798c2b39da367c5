import { Redis } from "@upstash/redis";
import { keyBase, lockKeyList, newToken } from "../../src/core/keys.ts";
import { RETRY_WINDOW_MS, scriptSha1 } from "../../src/redis/run-script.ts";
import * as scripts from "../../src/redis/scripts.gen.ts";
import { QUEUE_ALIVE_MS } from "../../src/waiting/backoff.ts";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import type { Library, LockAdapter } from "./types.ts";

const LEASE_MS = 10_000;
const SETTINGS = "EVALSHA of acquire.lua and release.lua with a default acquire()'s keys and arguments (a push waiter's " +
  "ticket, a place in line kept while it waits), nothing else; only for the uncontended yardstick (it never waits)";

interface BareLease {
  name: string;
  owner: string;
  fence: number;
}

/** Sends one loaded script by SHA-1 with keys and arguments; resolves with its integer reply. */
type RunScript = (sha1: string, keys: string[], args: string[]) => Promise<number[]>;

/**
 * fencelock's two scripts sent bare through @upstash/redis, no library code around them: what the
 * scripts alone cost, so the report can tell their share of a gap to the floor from the client's.
 */
export function fencelockScriptsLibrary(endpoint: Endpoint): Library {
  return {
    id: "fencelock-scripts",
    label: "fencelock's scripts alone (no library code)",
    transport: "http",
    settings: `@upstash/redis: ${SETTINGS}`,
    connect: async () => {
      const redis = new Redis({ url: endpoint.url, token: endpoint.token });
      await Promise.all([scripts.acquire, scripts.release, scripts.heartbeat].map((script) => redis.scriptLoad(script.text)));
      return scriptsAlone("bench-bare", (sha1, keys, args) => redis.evalsha(sha1, keys, args), async () => undefined);
    },
  };
}

/** The same over ioredis, beside the TCP section's libraries. */
export function fencelockScriptsTcpLibrary(endpoint: Endpoint): Library {
  return {
    id: "fencelock-scripts-tcp",
    label: "fencelock's scripts alone (TCP, no library code)",
    transport: "tcp",
    settings: `ioredis: ${SETTINGS}`,
    connect: async () => {
      const client = await countedConnection(endpoint.redisUrl);
      await Promise.all([scripts.acquire, scripts.release, scripts.heartbeat].map((script) => client.script("LOAD", script.text)));
      const run: RunScript = (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args) as Promise<number[]>;
      return scriptsAlone("bench-tcp-bare", run, async () => void (await client.quit()));
    },
  };
}

function scriptsAlone(prefix: string, run: RunScript, close: () => Promise<void>): LockAdapter<BareLease> {
  const [acquireSha1, releaseSha1, heartbeatSha1] = [scripts.acquire, scripts.release, scripts.heartbeat].map(scriptSha1) as [string, string, string];
  const keysOf = keyBase(prefix);
  const fenceTtlMs = String(LEASE_MS + RETRY_WINDOW_MS);
  // A lock set's channel id, as a push ticket carries it.
  const lockSet = newToken();
  return {
    name: "fencelock's scripts alone",
    exhausted: 0,
    acquire: async (name) => {
      const owner = newToken();
      const ticket = `${newToken()}.${owner}.${LEASE_MS}.${fenceTtlMs}.${lockSet}`;
      const [held, fence = 0] = await run(acquireSha1, lockKeyList(keysOf(name)), [owner, ticket, String(LEASE_MS), fenceTtlMs, String(QUEUE_ALIVE_MS)]);
      if (held !== 1) throw new Error(`${name} was busy: the scripts-alone yardstick runs uncontended only`);
      return { name, owner, fence };
    },
    release: async ({ name, owner, fence }) => {
      await run(releaseSha1, lockKeyList(keysOf(name), fence), [owner, String(fence), newToken(), String(RETRY_WINDOW_MS)]);
    },
    heartbeat: async ({ name, owner, fence }) => {
      await run(heartbeatSha1, lockKeyList(keysOf(name)), [owner, String(fence), String(LEASE_MS), fenceTtlMs]);
    },
    close,
  };
}
