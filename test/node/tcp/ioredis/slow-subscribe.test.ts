// fromIoredis when the server answers a SUBSCRIBE slowly (a distant node): a wait that ends before
// the answer must not leave its channel subscribed while other waits keep the connection open.
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createLocks } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";
import { serverBehindProxy } from "../../../support/silencing-proxy.ts";
import { until } from "../../../support/until.ts";
import { uniquePrefix } from "../../../support/upstash.ts";

const rig = serverBehindProxy();

describe("fromIoredis with a slow SUBSCRIBE", () => {
  it("unsubscribes a channel whose wait ended before the server confirmed it", async () => {
    const [client, admin] = [new Redis(rig.proxy.url), new Redis(rig.server.url)];
    const prefix = uniquePrefix("slow-subscribe");
    const holder = createLocks({ redis: fromIoredis(admin), prefix });
    const held = await Promise.all(["long", "short"].map((name) => holder.acquire(name)));
    const channels = async () => ((await admin.pubsub("CHANNELS", "fencelock.*")) as string[]).length;
    // A long wait keeps the subscriber connection open; its channel is subscribed once, slowly.
    rig.proxy.subscriberDelayMs = 3_500; // longer than a stream outlives its last wait (2 s)
    const long = createLocks({ redis: fromIoredis(client), prefix }).acquire("long", { waitMs: 20_000 });
    await until(async () => (await channels()) === 1, 10_000);
    // Another lock set's wait gives up before its SUBSCRIBE is answered.
    await expect(createLocks({ redis: fromIoredis(client), prefix }).acquire("short", { waitMs: 300 })).rejects.toThrow(/stayed busy/);
    await until(async () => (await channels()) === 2, 10_000); // the server has it at once; its answer is slow
    await until(async () => (await channels()) === 1, 10_000);
    await held[0]!.release();
    await (await long).release();
    await held[1]!.release();
    client.disconnect();
    admin.disconnect();
  });
});
