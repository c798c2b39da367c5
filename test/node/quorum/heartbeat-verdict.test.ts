// A quorum heartbeat with one yes, one no and one node down: the down node may still hold the lease,
// so the outcome is unknown (QuorumUnavailableError), not lost, which would stop work on a held lease.
import { expect, it } from "vitest";
import { LockLostError, QuorumUnavailableError } from "../../../src/index.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

it("calls a heartbeat with one yes, one no and one node down unknown, not lost", async () => {
  const rig = await nodes(3);
  const prefix = uniquePrefix("split-heartbeat");
  const locks = rig.locks(prefix);
  const lease = await locks.acquire("job");
  await rig.redis(1).admin.del(lockKeys(prefix, "job").lock); // node 1 lost the hold (restarted, say)
  await rig.kill(2);
  const outcome = await lease.heartbeat().catch((e: unknown) => e);
  expect(outcome).toBeInstanceOf(QuorumUnavailableError);
  expect(outcome).not.toBeInstanceOf(LockLostError);
});
