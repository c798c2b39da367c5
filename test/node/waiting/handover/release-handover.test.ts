// A release hands the lock straight to the push waiter first in line, and never to one that
// stopped asking; polling waiters take it on their next look.
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../../support/lock-keys.ts";
import { scriptSha1 } from "../../../../src/redis/run-script.ts";
import * as scripts from "../../../../src/redis/scripts.gen.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { droppingResponses, sendingTwice, withFetch } from "../../../support/fetch-wrappers.ts";
import { lockSet } from "../../../support/lock-set.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

const OWNER = "a".repeat(32);

/** Runs one of our scripts on the real server as the library would, for waiters we steer by hand. */
function script(prefix: string, run: scripts.LuaScript, args: string[]) {
  const keys = lockKeys(prefix, "gate");
  return upstash().eval(run.text, [keys.lock, keys.fence, keys.queue, keys.alive], args) as Promise<unknown[]>;
}

/** Queues a waiter as acquire() does; a push waiter's ticket names its owner and lease. */
async function queue(prefix: string, ticket: string, { queueMs = 2_000 } = {}) {
  const [held] = await script(prefix, scripts.acquire, [OWNER, ticket, "10000", "70000", String(queueMs)]);
  expect(held).toBe(0);
}
/** A push waiter's ticket: its request id, owner, lease, fence key TTL and lock set id. */
const pushTicket = (id: string) => `${id.padStart(32, "0")}.${OWNER}.10000.70000.${"c".repeat(32)}`;

describe("release hands the lock to the push waiter first in line", () => {
  it("needs no request from the waiter: the release takes the lock for it", async () => {
    const prefix = uniquePrefix("grant");
    // Every character a channel name could trip on: a URL path, an event line, a hash tag.
    const name = "order:{42}/%7B ü,x?#";
    const holder = await lockSet(prefix).acquire(name);
    const acquires = { n: 0 };
    const acquireSha1 = scriptSha1(scripts.acquire);
    const lease = await withFetch(
      (real) => (input, init) => {
        if (String(init?.body).includes(acquireSha1)) acquires.n++;
        return real(input, init);
      },
      async () => {
        const waiting = lockSet(prefix).acquire(name, { waitMs: 8_000, wake: "push" });
        // The first attempt, then the one after the stream confirmed; the next is a second away.
        await until(async () => acquires.n === 2, 3_000);
        await holder.release();
        return waiting;
      },
    );
    expect(acquires.n).toBe(2);
    expect(lease.fence).toBeGreaterThan(holder.fence);
    expect(await lockSet(prefix).inspect(name)).toMatchObject({ held: true, fence: lease.fence, holds: 1, waiters: 0 });
    // The waiter counts its lease from its last attempt, which is earlier than the handover.
    expect(lease.remainingMs()).toBeGreaterThan(5_000);
    expect(lease.remainingMs()).toBeLessThanOrEqual((await lockSet(prefix).inspect(name)).remainingMs);
    await lease.heartbeat();
    expect(await lease.release()).toBe("released");
    expect((await lockSet(prefix).inspect(name)).held).toBe(false);
  });

  it("leaves a polling waiter to take the lock on its next look", async () => {
    const prefix = uniquePrefix("grant-poll");
    const holder = await lockSet(prefix).acquire("gate");
    await queue(prefix, "1".repeat(32));
    await holder.release();
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: false, waiters: 1 });
    const [held] = await script(prefix, scripts.acquire, [OWNER, "1".repeat(32), "10000", "70000", "2000"]);
    expect(held).toBe(1);
  });

  it("never hands the lock to a waiter that stopped asking", async () => {
    const prefix = uniquePrefix("grant-ghost");
    const holder = await lockSet(prefix).acquire("gate");
    await queue(prefix, pushTicket("1"), { queueMs: 1 });
    await sleep(20);
    await holder.release();
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: false, waiters: 0 });
  });

  it("never hands the lock to a push waiter whose entry in alive was evicted, which says nothing of when it stopped", async () => {
    const prefix = uniquePrefix("grant-evicted");
    const holder = await lockSet(prefix).acquire("gate");
    await queue(prefix, pushTicket("1")); // queued once, then crashed
    // A live waiter behind it keeps the line (and its TTL) going.
    const waiting = lockSet(prefix).acquire("gate", { waitMs: 6_000 });
    await until(async () => (await lockSet(prefix).inspect("gate")).waiters === 2, 3_000);
    await upstash().del(lockKeys(prefix, "gate").alive); // what a maxmemory policy may do
    await sleep(2_500); // silent for longer than any place is kept
    await holder.release();
    // Handed to the ghost, the lock would stay held for its whole 10 s lease, past waitMs.
    const lease = await waiting;
    await lease.release();
  });

  it("never hands the lock to a head whose place ran out, when more than the sweep's 100 ran out together", async () => {
    const prefix = uniquePrefix("grant-101-gone");
    const holder = await lockSet(prefix).acquire("gate");
    // A push waiter first in line, then 100 more; all stop asking after the head's last attempt,
    // so the head's place runs out last of the 101 and the sweep (earliest first) misses it.
    await queue(prefix, pushTicket("0"));
    await Promise.all(Array.from({ length: 100 }, (_, i) => queue(prefix, (i + 1).toString(16).padStart(32, "0"))));
    await sleep(20);
    await queue(prefix, pushTicket("0"));
    const headLookedAt = performance.now();
    // A live waiter that looked 1 s later: its place lasts until headLookedAt + 3 s.
    await sleep(1_000);
    await queue(prefix, "f".repeat(32));
    // Released half a second after every ghost's place ran out, half a second before the live one's.
    await sleep(Math.max(0, headLookedAt + 2_500 - performance.now()));
    await holder.release();
    // Free, for the live waiter's next look; not held by the head for its whole lease.
    expect((await lockSet(prefix).inspect("gate")).held).toBe(false);
  });

  it("takes the lock back from a waiter that left as it was handed over, for the next in line", async () => {
    const prefix = uniquePrefix("grant-leave");
    const holder = await lockSet(prefix).acquire("gate");
    await queue(prefix, pushTicket("1"));
    await queue(prefix, pushTicket("2"));
    await holder.release();
    const handed = await lockSet(prefix).inspect("gate");
    expect(handed).toMatchObject({ held: true, holds: 1, waiters: 1 });
    expect(handed.fence).toBeGreaterThan(holder.fence);

    for (let i = 0; i < 2; i++) await script(prefix, scripts.leave, [pushTicket("1")]); // a retry changes nothing
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: false, waiters: 1 });
    const [held, fence] = await script(prefix, scripts.acquire, [OWNER, pushTicket("2"), "10000", "70000", "2000"]);
    expect(held).toBe(1);
    expect(fence).toBeGreaterThan(handed.fence ?? 0);
  });

  it("takes a waiter out of line when it joins its owner's hold, so no release hands the lock to nobody", async () => {
    const prefix = uniquePrefix("join-dequeues");
    const owner = "b".repeat(32); // two calls that share an owner, as two joins of one lease would
    const holder = await lockSet(prefix).acquire("gate");
    const first = lockSet(prefix).acquire("gate", { owner, waitMs: 10_000, wake: "push" });
    await until(async () => (await lockSet(prefix).inspect("gate")).waiters === 1, 3_000);
    const second = lockSet(prefix).acquire("gate", { owner, waitMs: 10_000, wake: "push" });
    await until(async () => (await lockSet(prefix).inspect("gate")).waiters === 2, 3_000);
    await holder.release(); // handed to the first; the second joins its hold
    const [a, b] = await Promise.all([first, second]);
    expect(b.fence).toBe(a.fence);
    expect((await lockSet(prefix).inspect("gate")).waiters).toBe(0);
    await a.release();
    await b.release();
    expect((await lockSet(prefix).inspect("gate")).held).toBe(false);
  });

  it.each([
    ["sent twice", () => sendingTwice],
    ["whose response was lost", () => droppingResponses(1)],
  ])("hands over once for a release %s", async (_, wrapper) => {
    const prefix = uniquePrefix("grant-retry");
    const holder = await lockSet(prefix).acquire("gate");
    await queue(prefix, pushTicket("1"));
    await queue(prefix, pushTicket("2"));
    expect(await withFetch(wrapper(), () => holder.release())).toBe("released");
    const handed = await lockSet(prefix).inspect("gate");
    expect(handed).toMatchObject({ held: true, holds: 1, waiters: 1 });
    // One fence minted for the handover, however many times the release ran.
    expect(Number(await upstash().hget(lockKeys(prefix, "gate").fence, "last"))).toBe(handed.fence);
  });
});
