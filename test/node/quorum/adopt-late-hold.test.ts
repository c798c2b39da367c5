// adopt.lua, run as shipped on real Redis: a hold minted after the node had seen a later lease's
// fence came late, and must not be given an earlier lease's fence (the caller gives it back).
import { expect, it } from "vitest";
import { nameTag, newToken, lockKeyList } from "../../../src/core/keys.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { quorumFenceTtlMs } from "../../../src/quorum/fence-ttl.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

it("refuses to give a late hold the earlier fence of a lease once the node has seen a later lease's", async () => {
  const redis = upstash();
  const keys = lockKeyList(nameTag(uniquePrefix("adopt-late"), "job"));
  const fenceTtl = String(quorumFenceTtlMs(10_000));
  const eval_ = (script: { text: string }, args: string[]) => redis.eval(script.text, keys, args) as Promise<number[]>;
  // The earlier lease X was given fence f1 by a majority elsewhere.
  const f1 = Date.now() * 1000;
  // Then another lease took this node with a later fence f2, and released it.
  const ownerB = newToken();
  const ticketB = newToken();
  const [grantedB, f2] = await eval_(scripts.acquire, [ownerB, ticketB, "10000", fenceTtl, "0", String(f1 + 5_000_000)]);
  expect(grantedB).toBe(1);
  expect(f2!).toBeGreaterThan(f1);
  await eval_(scripts.leave, [ticketB]);
  // X's grant for this node arrives only now: the node mints above f2 and remembers f2 as prior.
  const ownerX = newToken();
  const ticketX = newToken();
  const [grantedX, minted] = await eval_(scripts.acquire, [ownerX, ticketX, "10000", fenceTtl, "0", String(f1)]);
  expect(grantedX).toBe(1);
  expect(minted!).toBeGreaterThan(f2!);
  // The write-back of X's fence f1 to that hold must be refused.
  expect(await eval_(scripts.adopt, [ownerX, ticketX, String(minted), String(f1), fenceTtl, "1"])).toEqual([0, 0]);
  expect(await redis.hget(keys[0]!, "fence")).toBe(minted);
});
