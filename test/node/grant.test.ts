import { afterEach, describe, expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../src/index.ts";
import { lockKeys } from "../../src/keys.ts";
import { scriptSha1, type WakeSubscriber } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { sleep } from "../../src/wait.ts";
import { pushWaiter } from "../../src/wake.ts";
import { countingAcquires } from "../support/counting-client.ts";
import { droppingResponses, sendingTwice, withFetch } from "../support/fetch-wrappers.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

const OWNER = "a".repeat(32);
const lockSet = (prefix: string) => createLocks({ redis: upstash(), prefix });

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
const pushTicket = (id: string) => `${id.padStart(32, "0")}.${OWNER}.10000.70000`;

/** A push waiter's client that counts its acquire attempts and holds its messages back until told. */
async function lateMessages() {
  const real = upstash();
  const { client: counted, attempts } = await countingAcquires(real);
  const heldBack: (() => void)[] = [];
  const client: RedisClient = {
    ...counted,
    subscribe(channel): WakeSubscriber {
      const subscriber = real.subscribe(channel);
      return {
        on: (type, listener) => subscriber.on(type, type === "message" ? (event) => heldBack.push(() => listener(event)) : listener),
        unsubscribe: () => subscriber.unsubscribe(),
      };
    },
  };
  return { client, attempts, heldBack };
}

describe("release hands the lock to the push waiter first in line", () => {
  it("needs no request from the waiter: the release takes the lock for it", async () => {
    const prefix = uniquePrefix("grant");
    // Every character a channel name could trip on: a URL path, an event line, a hash tag.
    const name = "order:{42}/%7B ü,x?#";
    const holder = await lockSet(prefix).acquire(name);
    const acquires = { n: 0 };
    const acquireSha1 = await scriptSha1(scripts.acquire);
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

  it("gives a waiter that missed the message the same lease on its next attempt", async () => {
    const prefix = uniquePrefix("grant-lost");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages(); // its messages never arrive
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    await until(async () => heldBack.length === 1, 3_000);
    const handed = await lockSet(prefix).inspect("gate");
    const lease = await waiting; // its next attempt, within a second
    expect(attempts.n).toBe(3);
    // The same fence and one hold: the attempt found the lock already taken for it.
    expect(lease.fence).toBe(handed.fence);
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: true, fence: lease.fence, holds: 1 });
    expect(await lease.release()).toBe("released");
    expect((await lockSet(prefix).inspect("gate")).held).toBe(false);
  });

  it("never takes a handover that lapsed before its last attempt, however late the message", async () => {
    const prefix = uniquePrefix("grant-late");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages();
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 15_000, wake: "push" });
    await until(async () => attempts.n === 2, 3_000); // the attempt after the stream confirmed
    await holder.release(); // handed to the waiter; the message is held back
    await until(async () => heldBack.length === 1, 3_000);
    // The handover lapses (as if the waiter's isolate froze) and someone else takes the lock.
    await upstash().del(lockKeys(prefix, "gate").lock);
    const other = await lockSet(prefix).acquire("gate");
    await until(async () => attempts.n === 3, 3_000); // the waiter looks again: busy
    heldBack.splice(0).forEach((deliver) => deliver());
    expect(await Promise.race([waiting.then(() => "took it"), sleep(300).then(() => "still waiting")])).toBe("still waiting");

    await other.release();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(other.fence);
    expect(await lockSet(prefix).inspect("gate")).toMatchObject({ held: true, fence: lease.fence });
    await lease.release();
  });

  it("gives back a handover its waiter never saw when the wait is aborted", async () => {
    const prefix = uniquePrefix("grant-abort");
    const holder = await lockSet(prefix).acquire("gate");
    const { client, attempts, heldBack } = await lateMessages();
    const controller = new AbortController();
    const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 15_000, wake: "push", signal: controller.signal });
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    await until(async () => heldBack.length === 1, 3_000);
    expect((await lockSet(prefix).inspect("gate")).held).toBe(true); // handed over, unseen
    controller.abort(new Error("client went away"));
    await expect(waiting).rejects.toThrow("client went away");
    // At once, not when the 10 s lease would have lapsed.
    await until(async () => !(await lockSet(prefix).inspect("gate")).held, 2_000);
    expect(await lockSet(prefix).tryAcquire("gate")).not.toBeNull();
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

describe("a push waiter's messages", () => {
  function waiterHearing(...messages: string[]) {
    const subscriber: WakeSubscriber = {
      on(type, listener) {
        if (type === "subscribe") queueMicrotask(() => listener({}));
        if (type === "message") setTimeout(() => messages.forEach((message) => listener({ message })), 5);
      },
      unsubscribe: async () => undefined,
    };
    const unused = () => Promise.reject(new Error("no script runs in these tests"));
    const redis: RedisClient = { evalsha: unused, eval: unused, subscribe: () => subscriber };
    return pushWaiter(redis, "c", "T");
  }
  const busy = { busyForMs: 5_000, position: 0 };
  const heard = async (...messages: string[]) => {
    const waiter = waiterHearing(...messages);
    await waiter.pause(0, busy, 1_000); // opens the stream
    const started = performance.now();
    const fence = await waiter.pause(1, busy, 1_000);
    return { fence, woke: performance.now() - started < 500 };
  };

  it("takes the fence from a handover on its channel", async () => {
    expect(await heard("42")).toEqual({ fence: 42, woke: true });
  });

  it("ignores malformed fences", async () => {
    expect(await heard("4.5", "-3", "9007199254740993", "", "T:42", "x")).toEqual({ fence: undefined, woke: false });
  });
});

describe("a push waiter's stream", () => {
  afterEach(() => void vi.useRealTimers());

  it("is opened afresh every minute, so one that died without a word costs at most that", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const seen = { subscribed: 0, unsubscribed: 0 };
    const subscriber: WakeSubscriber = {
      on(type, listener) {
        if (type === "subscribe") queueMicrotask(() => listener({}));
      },
      unsubscribe: async () => void (seen.unsubscribed += 1),
    };
    const unused = () => Promise.reject(new Error("no script runs in this test"));
    const redis: RedisClient = { evalsha: unused, eval: unused, subscribe: () => ((seen.subscribed += 1), subscriber) };
    const waiter = pushWaiter(redis, "c", "T");
    const busy = { busyForMs: 10_000, position: 0 };
    // A wait of 70 s: one pause a second, as a waiter with no message sleeps.
    for (let tries = 0; tries < 70; tries++) {
      const paused = waiter.pause(tries, busy, 600_000);
      await vi.advanceTimersByTimeAsync(1_000);
      await paused;
    }
    expect(seen).toEqual({ subscribed: 2, unsubscribed: 1 });
    const closed = waiter.close(); // a macrotask later, after the caller has its lease
    await vi.advanceTimersByTimeAsync(0);
    await closed;
    expect(seen).toEqual({ subscribed: 2, unsubscribed: 2 });
  });
});

