// Push waiters on their lock set's stream (no Redis): the handovers they believe, and when the
// stream is opened, shared, replaced and closed.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RedisClient } from "../../../../src/index.ts";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { sha1Hex } from "../../../../src/core/sha1.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { pushWaiter } from "../../../../src/waiting/push.ts";
import { wakeChannels } from "../../../../src/waiting/wake-channels.ts";
import { until } from "../../../support/until.ts";

const OWNER = "a".repeat(32);
/** A lock set's default leaseMs: no effect on how often a waiter looks. */
const LEASE_MS = 10_000;
const TICKET = "7".repeat(32);
const unused = () => Promise.reject(new Error("no script runs in these tests"));

/** A client whose streams confirm at once, and whose stream lifecycle is counted. */
function fakeClient(behaviour: { messages?: string[]; fail?: boolean | ((stream: number) => boolean); confirmAfterMs?: number } = {}) {
  const seen = { subscribed: 0, unsubscribed: 0, channels: new Set<string>() };
  const redis: RedisClient = {
    evalsha: unused,
    eval: unused,
    subscribe(channel): WakeSubscriber {
      seen.subscribed += 1;
      seen.channels.add(channel);
      const fails = typeof behaviour.fail == "function" ? behaviour.fail(seen.subscribed) : behaviour.fail;
      return {
        on(type, listener) {
          const confirm = () => listener({});
          if (type === "subscribe" && !fails) void (behaviour.confirmAfterMs ? setTimeout(confirm, behaviour.confirmAfterMs) : queueMicrotask(confirm));
          if (type === "error" && fails) queueMicrotask(() => listener(new Error("no streaming here")));
          if (type === "message") setTimeout(() => behaviour.messages?.forEach((message) => listener({ message })), 5);
        },
        unsubscribe: async () => void (seen.unsubscribed += 1),
      };
    },
  };
  return { redis, seen };
}

// As release.lua signs a handover: only it and the heir know the owner token.
const handover = (fence: string, owner = OWNER, ticket = TICKET) => `${ticket}:${fence}:${sha1Hex(`${fence}:${owner}`)}`;
const busy = { busyForMs: 5_000, position: 0 };

describe("a push waiter's messages", () => {
  const heard = async (...messages: string[]) => {
    const waiter = pushWaiter(wakeChannels(fakeClient({ messages }).redis, () => undefined)("k"), TICKET, OWNER, LEASE_MS);
    await waiter.pause(0, busy, 1_000); // opens the stream, and returns to attempt once it is live
    const started = performance.now();
    const fence = await waiter.pause(1, busy, 1_000);
    waiter.close();
    return { fence, woke: performance.now() - started < 500 };
  };

  it("takes the fence from a handover addressed to its ticket", async () => {
    expect(await heard(await handover("42"))).toEqual({ fence: 42, woke: true });
  });

  it("ignores malformed fences, handovers not signed for its owner, and other waiters' handovers", async () => {
    const malformed = await Promise.all(["4.5", "-3", "9007199254740993", "", "042"].map((fence) => handover(fence)));
    const forged = [`${TICKET}:42`, `${TICKET}:42:${"0".repeat(40)}`, await handover("42", "b".repeat(32)), `${await handover("42")}x`];
    const elsewhere = [await handover("42", OWNER, "8".repeat(32)), (await handover("42")).slice(33)];
    expect(await heard(...malformed, ...forged, ...elsewhere, "x")).toEqual({ fence: undefined, woke: false });
  });
});

describe("a lock set's stream", () => {
  afterEach(() => void vi.useRealTimers());

  it("is one for all the lock set's waiters, on the channel named by the id their tickets carry", async () => {
    const { redis, seen } = fakeClient();
    const channel = wakeChannels(redis, () => undefined)("k");
    const waiters = ["1", "2", "3"].map((digit) => pushWaiter(channel, digit.repeat(32), OWNER, LEASE_MS));
    await Promise.all(waiters.map((waiter, tries) => waiter.pause(tries, busy, 50)));
    expect(seen.subscribed).toBe(1);
    expect([...seen.channels]).toEqual([`fencelock.${channel.address}`]);
    expect(channel.address).toMatch(/^[0-9a-f]{32}$/);
  });

  it("on a client with ssubscribe (Cluster), is one per lock, on a shard channel in the lock's slot, gone once idle", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const { redis, seen } = fakeClient();
    const sharded: RedisClient = { ...redis, subscribe: undefined, ssubscribe: redis.subscribe };
    const channelFor = wakeChannels(sharded, () => undefined);
    const [a, b] = [channelFor("p:{a}:lock"), channelFor("p:{b}:lock")];
    expect(channelFor("p:{a}:lock")).toBe(a);
    const id = a.address.slice(0, 32);
    expect([a.address, b.address]).toEqual([`${id}.s`, `${id}.s`]);
    const waiters = [pushWaiter(a, "1".repeat(32), OWNER, LEASE_MS), pushWaiter(b, "2".repeat(32), OWNER, LEASE_MS)];
    await Promise.all(waiters.map((waiter) => waiter.pause(0, busy, 50).then(() => waiter.close())));
    // The lock key from its hash tag on: the same slot, whatever prefix the client adds to keys.
    expect([...seen.channels]).toEqual([`fencelock.${id}:{a}:lock`, `fencelock.${id}:{b}:lock`]);
    await vi.advanceTimersByTimeAsync(2_100);
    expect(seen.unsubscribed).toBe(2);
    expect(channelFor("p:{a}:lock")).not.toBe(a);
  });

  it("on a client with ssubscribe, is forgotten as soon as a wait that opened none ends, as an uncontended acquire's", () => {
    const { redis, seen } = fakeClient();
    const channelFor = wakeChannels({ ...redis, subscribe: undefined, ssubscribe: redis.subscribe }, () => undefined);
    const first = channelFor("p:{a}:lock");
    pushWaiter(first, TICKET, OWNER, LEASE_MS).close();
    // A fresh one: the lock set keeps none for locks nobody waits on.
    expect(channelFor("p:{a}:lock")).not.toBe(first);
    expect(seen.subscribed).toBe(0);
  });

  it("is opened afresh every minute beside the old one, and closed 2 s after its last waiter leaves", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const { redis, seen } = fakeClient();
    const waiter = pushWaiter(wakeChannels(redis, () => undefined)("k"), TICKET, OWNER, LEASE_MS);
    // A wait of 70 s: one pause a second, as a waiter with no message sleeps.
    for (let tries = 0; tries < 70; tries++) {
      const paused = waiter.pause(tries, busy, 600_000);
      await vi.advanceTimersByTimeAsync(1_000);
      await paused;
    }
    // The old stream closed only once the new one confirmed: no message could fall between them.
    expect([seen.subscribed, seen.unsubscribed]).toEqual([2, 1]);
    waiter.close();
    await vi.advanceTimersByTimeAsync(1_900);
    expect(seen.unsubscribed).toBe(1); // kept for the next wait, which then needs no new connection
    await vi.advanceTimersByTimeAsync(200);
    expect(seen.unsubscribed).toBe(2);
  });

  it("is kept when the minute's fresh one fails, and fresh ones are tried after 1 s, then 2 s, 4 s…", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    // The refresh at 60 s fails, and the tries after 1, 2 and 4 s too.
    const { redis, seen } = fakeClient({ fail: (stream) => stream >= 2 && stream <= 5 });
    const channel = wakeChannels(redis, () => undefined)("k");
    const waiter = pushWaiter(channel, TICKET, OWNER, LEASE_MS);
    const triedAt: number[] = [];
    for (let tries = 0; tries < 90; tries++) {
      const before = seen.subscribed;
      const paused = waiter.pause(tries, busy, 600_000);
      if (seen.subscribed > before) triedAt.push(tries);
      await vi.advanceTimersByTimeAsync(1_000);
      await paused;
      expect(channel.live).toBe(true);
    }
    // The pause doubles after each failure (1, 2, 4, 8 s), and the try that confirms ends it.
    expect(triedAt).toEqual([0, 60, 61, 63, 67, 75]);
    waiter.close();
  });

  // An @upstash/redis stream whose body ended says nothing: a lost handover is the only sign.
  it("counts as failed, and another opens at once, when twice the attempt after a pause that listened on it in vain takes the lock", async () => {
    const { redis, seen } = fakeClient();
    const channel = wakeChannels(redis, () => undefined)("k");
    const inVain = async (ticket: string) => {
      const waiter = pushWaiter(channel, ticket, OWNER, LEASE_MS);
      await waiter.pause(0, busy, 50); // returns to attempt at once, or once the stream is live
      await waiter.pause(1, busy, 50); // listens, and hears nothing
      waiter.granted();
      waiter.close();
    };
    await inVain("1".repeat(32));
    expect([channel.live, seen.unsubscribed]).toEqual([true, 0]);
    const { epoch } = channel;
    await inVain("2".repeat(32));
    expect([channel.live, channel.epoch, seen.unsubscribed]).toEqual([false, epoch + 1, 1]);
    expect(channel.keepOpen()).toBe(true);
    expect(seen.subscribed).toBe(2);
  });

  it("is kept when a message came between two handovers lost (a waiter that left holding one gives it back unheard)", async () => {
    // The stream brings another waiter's handover 5 ms after it opens.
    const { redis, seen } = fakeClient({ messages: [handover("42", OWNER, "9".repeat(32))] });
    const channel = wakeChannels(redis, () => undefined)("k");
    const first = pushWaiter(channel, "1".repeat(32), OWNER, LEASE_MS);
    await first.pause(0, busy, 50); // opens the stream, and returns once it is live
    await first.pause(1, busy, 1); // listens in vain, before the message
    first.granted();
    first.close();
    await sleep(20);
    const second = pushWaiter(channel, "2".repeat(32), OWNER, LEASE_MS);
    await second.pause(0, busy, 20); // listens in vain, after it
    second.granted();
    second.close();
    expect([channel.live, seen.subscribed, seen.unsubscribed]).toEqual([true, 1, 0]);
  });

  it("is kept when the lock was taken after a pause that was not listening, heard a handover, outlasted the holder's TTL, or followed a hold come too late", async () => {
    const { redis, seen } = fakeClient({ messages: [handover("42")] });
    const channel = wakeChannels(redis, () => undefined)("k");
    const waiter = pushWaiter(channel, TICKET, OWNER, LEASE_MS);
    await waiter.pause(0, busy, 50); // the stream was opening: the attempt before it was not covered
    waiter.granted();
    expect(await waiter.pause(1, busy, 1_000)).toBe(42); // a handover (one that lapsed, say), then the lock taken by an attempt
    waiter.granted();
    await waiter.pause(2, { busyForMs: -1, position: -1 }, 1_000); // this call's own hold, whose reply came too late
    waiter.granted();
    await waiter.pause(3, { busyForMs: 10, position: 0 }, 1_000); // a look after the holder's TTL: the lock expired unreleased
    waiter.granted();
    expect([channel.live, seen.subscribed, seen.unsubscribed]).toEqual([true, 1, 0]);
    waiter.close();
  });

  it("is kept when it confirmed while the attempt after a pause that polled took the lock", async () => {
    const { redis, seen } = fakeClient({ confirmAfterMs: 100 });
    const channel = wakeChannels(redis, () => undefined)("k");
    const waiter = pushWaiter(channel, TICKET, OWNER, LEASE_MS);
    await waiter.pause(0, busy, 30); // polls: the stream is still opening
    await until(async () => channel.live, 1_000); // and confirms while the attempt is out
    waiter.granted();
    expect([channel.live, seen.unsubscribed]).toEqual([true, 0]);
    waiter.close();
  });

  it("leaves no timer behind a wait that never opened one, as an uncontended acquire's", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const { redis, seen } = fakeClient();
    pushWaiter(wakeChannels(redis, () => undefined)("k"), TICKET, OWNER, LEASE_MS).close();
    expect(vi.getTimerCount()).toBe(0);
    expect(seen.subscribed).toBe(0);
  });

  it("that fails before it confirms: waits poll, the failure is reported, and the next is tried after 1 s, then 2 s…", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const { redis, seen } = fakeClient({ fail: true });
    const warnings: string[] = [];
    const channel = wakeChannels(redis, (message) => warnings.push(message))("k");
    const waiter = pushWaiter(channel, TICKET, OWNER, LEASE_MS);
    const triedAt: number[] = [];
    for (let ms = 0; ms < 200_000; ms += 100) {
      const before = seen.subscribed;
      const open = channel.keepOpen();
      if (seen.subscribed > before) triedAt.push(ms / 1000);
      await vi.advanceTimersByTimeAsync(100);
      expect(open && channel.live).toBe(false);
    }
    // Each try fails at once; the pause doubles up to a minute, which a refusal that stays then costs.
    expect(triedAt).toEqual([0, 1, 3, 7, 15, 31, 63, 123, 183]);
    // Each failure is reported; createLocks says it once per lock set.
    expect(warnings).toHaveLength(triedAt.length);
    expect(warnings[0]).toContain("no streaming here");
    waiter.close();
  });
});
