// A push waiter on its own (no Redis): the fences it takes from its channel, and how often it
// opens its stream afresh.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RedisClient } from "../../../src/index.ts";
import type { WakeSubscriber } from "../../../src/redis.ts";
import { pushWaiter } from "../../../src/wake.ts";

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
