// fencing.md: when Redis loses `prefix:store-ttl`, a store without ttlMs may write records a store
// with ttlMs gave a TTL. It makes them permanent (store-fence.lua's PERSIST): one that expired
// would be taken as never written, and a stale fence accepted.
import { expect, it } from "vitest";
import { createFencedStore, StaleFenceError } from "../../../../src/index.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

it("a store without ttlMs keeps a record for good even when a store with ttlMs gave it a TTL first", async () => {
  const prefix = uniquePrefix("ttl-lost");
  const raw = upstash();
  // Ahead of the clock (as fences may be, by up to 1 s), so a store with ttlMs takes them for a
  // resource with no record however slow the first request is.
  const older = (Date.now() + 500) * 1000;
  const newer = older + 100_000;
  // A process with ttlMs checks the prefix and writes.
  const withTtl = createFencedStore({ redis: upstash(), prefix, ttlMs: 2_000 });
  await withTtl.write("doc", "a", older);
  // Redis loses the prefix's record (eviction, FLUSH of that key, a failover that lost it).
  await raw.del(`${prefix}:store-ttl`);
  // A process without ttlMs now records its own (none) and writes under a newer fence.
  const forGood = createFencedStore({ redis: upstash(), prefix });
  await forGood.write("doc", "b", newer);
  await sleep(2_300);
  // The record must still be there, so the older fence stays refused.
  const error = await forGood.write("doc", "stale", older).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StaleFenceError);
  expect(await forGood.read("doc")).toEqual({ value: "b", fence: newer });
});
