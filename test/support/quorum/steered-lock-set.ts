// A lock set over a file's private quorum nodes, each steerable, and each node's hold count of lock "r".
import { createLocks } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { lockKeys } from "../lock-keys.ts";
import { until } from "../until.ts";
import { uniquePrefix } from "../upstash.ts";
import type { privateServers } from "./private-servers.ts";
import { steered } from "./steered-client.ts";

export function steeredLockSet(rig: ReturnType<typeof privateServers>, label: string, timeoutMs: number) {
  const prefix = uniquePrefix(label);
  const nodes = rig.servers.map((server) => steered(fromIoredis(rig.connect(server))));
  const locks = createLocks({ redis: nodes.map((node) => node.client), prefix, leaseMs: 10_000, timeoutMs });
  const { lock } = lockKeys(prefix, "r");
  const admins = rig.servers.map(rig.connect);
  const holds = () => Promise.all(admins.map(async (admin) => Number(await admin.hget(lock, "holds"))));
  /** Until the nodes count these holds, as "2,1,2": a call returns on a majority, and the last node's request lands after. */
  const holdsSettle = (counts: string) => until(async () => (await holds()).join() === counts, 5_000);
  /** Another client's lock set on the same nodes. */
  const other = () => createLocks({ redis: rig.servers.map((server) => fromIoredis(rig.connect(server))), prefix, timeoutMs: 500 });
  return { prefix, nodes, locks, lock, admins, holds, holdsSettle, other };
}
