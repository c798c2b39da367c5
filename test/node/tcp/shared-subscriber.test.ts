// The shared subscriber of the TCP adapters, over a fake connection (the test is about which
// streams hear of a drop, not about Redis): a drop reaches the streams whose channels it lost.
import { describe, expect, it } from "vitest";
import { sharedSubscriber, type SubscriberConnection } from "../../../src/tcp/shared-subscriber.ts";

function fakeConnection() {
  const drops: ((reason: string, channels?: readonly string[]) => void)[] = [];
  const connection: SubscriberConnection = {
    subscribe: () => Promise.resolve(),
    unsubscribe: () => Promise.resolve(),
    onMessage: () => undefined,
    onDrop: (listener) => void drops.push(listener),
    close: () => undefined,
  };
  return { connection, drop: (reason: string, channels?: readonly string[]) => drops.forEach((listener) => listener(reason, channels)) };
}

describe("a shared subscriber's drop", () => {
  const streamsOn = (subscribe: ReturnType<typeof sharedSubscriber>, channels: string[]) => {
    const errors = new Map<string, unknown[]>(channels.map((channel) => [channel, []]));
    for (const channel of channels) subscribe(channel).on("error", (error) => errors.get(channel)!.push(error));
    return errors;
  };

  it("reaches only the streams of the channels that connection carried, when it says which", () => {
    const { connection, drop } = fakeConnection();
    const errors = streamsOn(sharedSubscriber(() => connection), ["a", "b", "c"]);
    drop("node 7101 closed", ["b"]);
    expect([...errors].map(([channel, list]) => [channel, list.length])).toEqual([["a", 0], ["b", 1], ["c", 0]]);
  });

  it("reaches every stream when it does not say", () => {
    const { connection, drop } = fakeConnection();
    const errors = streamsOn(sharedSubscriber(() => connection), ["a", "b"]);
    drop("closed");
    expect([...errors.values()].map((list) => String(list[0]))).toEqual(["Error: subscriber connection dropped: closed", "Error: subscriber connection dropped: closed"]);
  });
});
