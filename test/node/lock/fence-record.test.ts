// A lock's last fence outlives its lease by 60 s (design.md): a clock stepped back within that time
// still mints above it, and inspect() of a free lock reports it.
import { expect, it } from "vitest";
import { createLocks } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { lockKeys } from "../../support/lock-keys.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

it("keeps a lock's last fence for 60 s past its lease, not only as long as the lease", async () => {
  const prefix = uniquePrefix("fence-ttl");
  const locks = createLocks({ redis: upstash(), prefix, leaseMs: 1_000 });
  await locks.inspect("job"); // warm: a first acquire too slow to use would rejoin, which also sets the TTL
  const lease = await locks.acquire("job");
  await sleep(1_300); // the lease lapses
  expect(await locks.inspect("job")).toMatchObject({ held: false, fence: lease.fence });
  expect(await upstash().pttl(lockKeys(prefix, "job").fence)).toBeGreaterThan(55_000);
  // Past the lease, not a flat minute: a 10 s lease's record lives 70 s.
  const long = await locks.acquire("long", { leaseMs: 10_000 });
  expect(await upstash().pttl(lockKeys(prefix, "long").fence)).toBeGreaterThan(65_000);
  await long.release();
});
