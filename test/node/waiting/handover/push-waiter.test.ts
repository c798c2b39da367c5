// A push waiter on its own (no Redis): the handovers it believes, and how often it opens its
// stream afresh.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RedisClient } from "../../../../src/index.ts";
import type { WakeSubscriber } from "../../../../src/core/client.ts";
import { sha1Hex } from "../../../../src/core/keys.ts";
import { pushWaiter } from "../../../../src/waiting/push.ts";

const OWNER = "a".repeat(32);

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
    return pushWaiter(redis, "c", "T", OWNER);
  }
  // As release.lua signs a handover: only it and the heir know the owner token.
  const handover = async (fence: string, owner = OWNER) => `${fence}:${await sha1Hex(`${fence}:${owner}`)}`;
  const busy = { busyForMs: 5_000, position: 0 };
  const heard = async (...messages: string[]) => {
    const waiter = waiterHearing(...messages);
    await waiter.pause(0, busy, 1_000); // opens the stream
    const started = performance.now();
    const fence = await waiter.pause(1, busy, 1_000);
    return { fence, woke: performance.now() - started < 500 };
  };

  it("takes the fence from a handover on its channel", async () => {
    expect(await heard(await handover("42"))).toEqual({ fence: 42, woke: true });
  });

  it("ignores malformed fences, and handovers not signed for its owner", async () => {
    const malformed = await Promise.all(["4.5", "-3", "9007199254740993", "", "042"].map((fence) => handover(fence)));
    const forged = ["42", `42:${"0".repeat(40)}`, await handover("42", "b".repeat(32)), `${await handover("42")}x`];
    expect(await heard(...malformed, ...forged, "x")).toEqual({ fence: undefined, woke: false });
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
    const waiter = pushWaiter(redis, "c", "T", OWNER);
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
