// A stream may bring its own SHA-1 (the TCP adapters: a synchronous one in plain JS, with no trip
// through the thread pool that crypto.subtle takes in Node): a handover is still checked against
// the waiter's owner token, and that SHA-1 is SHA-1.
import { createHash } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { sha1Hex } from "../../../../src/core/keys.ts";
import { sharedSubscriber, type SubscriberConnection } from "../../../../src/tcp/shared-subscriber.ts";
import { wakeChannel, type WakeStream } from "../../../../src/waiting/wake-channel.ts";

const TICKET = "0123456789abcdef0123456789abcdef";
const OWNER = "fedcba9876543210fedcba9876543210";

function fakeStream(digest?: (text: string) => string) {
  const listeners = new Map<string, ((event: unknown) => void)[]>();
  const stream: WakeStream = {
    on: (type, listener) => void listeners.set(type, [...(listeners.get(type) ?? []), listener]),
    unsubscribe: () => Promise.resolve(),
    ...(digest ? { digest } : {}),
  };
  const emit = (type: string, event: unknown) => listeners.get(type)?.forEach((listener) => listener(event));
  return { stream, emit };
}

function channelOn(stream: WakeStream) {
  const channel = wakeChannel({ address: "a", open: () => stream }, () => undefined);
  const member = channel.join(TICKET, OWNER);
  expect(channel.keepOpen()).toBe(true);
  return member;
}

describe("a stream's own digest", () => {
  it("is what checks a handover: the right digest hands it over, a forged one does not", async () => {
    const digest = vi.fn(sha1Of);
    const { stream, emit } = fakeStream(digest);
    const member = channelOn(stream);
    emit("subscribe", {});
    const woken = vi.fn();
    member.wakers.add(woken);
    emit("message", { message: `${TICKET}:1700000000000001:${"0".repeat(40)}` });
    await Promise.resolve();
    expect(member.fence).toBeUndefined();
    emit("message", { message: `${TICKET}:1700000000000002:${sha1Of(`1700000000000002:${OWNER}`)}` });
    await Promise.resolve();
    expect(member.fence).toBe(1700000000000002);
    expect(woken).toHaveBeenCalledTimes(1);
    expect(digest).toHaveBeenCalledWith(`1700000000000002:${OWNER}`);
  });

  it("falls back to crypto.subtle when the stream has none", async () => {
    const { stream, emit } = fakeStream();
    const member = channelOn(stream);
    emit("subscribe", {});
    emit("message", { message: `${TICKET}:1700000000000003:${await sha1Hex(`1700000000000003:${OWNER}`)}` });
    await vi.waitFor(() => expect(member.fence).toBe(1700000000000003));
  });

  it("of the TCP adapters is SHA-1 in lowercase hex, as crypto.subtle's and redis.sha1hex", async () => {
    const connection: SubscriberConnection = {
      subscribe: () => Promise.resolve(), unsubscribe: () => Promise.resolve(), onMessage: () => undefined, onDrop: () => undefined, close: () => undefined,
    };
    const stream = sharedSubscriber(() => connection)("c");
    for (const text of ["", "abc", "1700000000000002:" + OWNER, "é ✓ 𝄞"]) expect(stream.digest?.(text)).toBe(await sha1Hex(text));
    // "abc" is FIPS 180's own example.
    expect(stream.digest?.("abc")).toBe("a9993e364706816aba3e25717850c26c9cd0d89d");
    // Every length across the block boundaries (55/56 bytes: the length field's own block; 64; 119/120...).
    for (let n = 0; n <= 200; n++) {
      const text = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7 + n) % 90))).join("");
      expect(stream.digest?.(text), `length ${n}`).toBe(sha1Of(text));
    }
    expect(stream.digest?.("ü".repeat(300))).toBe(sha1Of("ü".repeat(300)));
  });
});

function sha1Of(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}
