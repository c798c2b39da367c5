// How long a quorum lease is trusted: from before its requests were sent, less the drift allowance,
// and only as long as a majority of the nodes hold it (not the longest TTL any one node has).
import { expect, it } from "vitest";
import { driftMs } from "../../../src/core/backend.ts";
import { delayingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

it("trusts a lease for less than its TTL, counted from before the requests were sent", async () => {
  const rig = await nodes(3);
  const locks = rig.locks(uniquePrefix("q-validity"), { leaseMs: 2_000 });
  await (await locks.acquire("warm")).release(); // scripts cached: one request per node
  const lease = await withFetch(delayingResponses(300), () => locks.acquire("job"));
  expect(lease.remainingMs()).toBeLessThanOrEqual(2_000 - 300 - driftMs(2_000));
  await lease.release();
});

it("trusts a reentrant join no longer than a majority holds it, whatever TTL one node has", async () => {
  const rig = await nodes(3);
  const prefix = uniquePrefix("q-majority-ttl");
  const locks = rig.locks(prefix, { leaseMs: 2_000 });
  const lease = await locks.acquire("job");
  // One node (a minority) would hold it for a minute; the other two let it go after 2 s.
  await rig.redis(0).admin.pexpire(lockKeys(prefix, "job").lock, 60_000);
  const joined = await locks.acquire("job", { owner: lease.owner });
  expect(joined.remainingMs()).toBeLessThanOrEqual(2_000);
  await joined.release();
  await lease.release();
});
