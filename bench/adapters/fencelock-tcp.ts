import { createLocks } from "../../src/index.ts";
import type { Lease } from "../../src/lock/lease.ts";
import { fromIoredis } from "../../src/ioredis.ts";
import { countedConnection } from "../harness/requests.ts";
import type { Endpoint } from "../harness/server.ts";
import { fencelockAdapter } from "./fencelock.ts";
import type { Library, LockAdapter } from "./types.ts";

/**
 * fencelock over TCP: an ioredis connection of its own per client through fromIoredis, with
 * default options (leaseMs 10 s, waitMs 5 s, push wake-ups on the adapter's one subscriber
 * connection, opened on the first wait and closed 2 s after the last).
 */
export function fencelockTcpLibrary(endpoint: Endpoint): Library {
  return {
    id: "fencelock-tcp",
    label: "fencelock (TCP, ioredis)",
    transport: "tcp",
    settings: "createLocks({ redis: fromIoredis(ioredis), prefix }) with defaults (leaseMs 10 s, waitMs 5 s, push wake-ups over the " +
      "adapter's one shared SUBSCRIBE connection per client); acquire(name) + lease.release(); a LockTimeoutError after 5 s " +
      "counts as a retry window run out and acquire is called again",
    connect: () => connectFencelockTcp(endpoint),
  };
}

async function connectFencelockTcp(endpoint: Endpoint): Promise<LockAdapter<Lease>> {
  const client = await countedConnection(endpoint.redisUrl);
  const locks = createLocks({ redis: fromIoredis(client), prefix: "bench-tcp" });
  return fencelockAdapter("fencelock (TCP)", locks, {}, async () => void (await client.quit()));
}
