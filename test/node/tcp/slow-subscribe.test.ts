// Both TCP adapters when the server answers a SUBSCRIBE slowly (a distant node): a wait that ends
// before the answer must not leave its channel subscribed while other waits keep the connection open.
import { Redis } from "ioredis";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { createLocks, type RedisClient } from "../../../src/index.ts";
import { fromIoredis } from "../../../src/ioredis.ts";
import { fromNodeRedis } from "../../../src/node-redis.ts";
import { serverBehindProxy } from "../../support/silencing-proxy.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const rig = serverBehindProxy();

/** An adapter over a client connected through the proxy, and how to close that client. */
const adapters: [string, (url: string) => Promise<[RedisClient, () => unknown]>][] = [
  ["fromIoredis", async (url) => {
    const client = new Redis(url);
    return [fromIoredis(client), () => client.disconnect()];
  }],
  ["fromNodeRedis", async (url) => {
    const client = await createClient({ url }).on("error", () => {}).connect();
    return [fromNodeRedis(client), () => client.destroy()];
  }],
];

describe.each(adapters)("%s with a slow SUBSCRIBE", (_, adapter) => {
  it("unsubscribes a channel whose wait ended before the server confirmed it", async () => {
    const [[redis, close], admin] = [await adapter(rig.proxy.url), new Redis(rig.server.url)];
    const prefix = uniquePrefix("slow-subscribe");
    const holder = createLocks({ redis: fromIoredis(admin), prefix });
    const held = await Promise.all(["long", "short"].map((name) => holder.acquire(name)));
    const channels = async () => ((await admin.pubsub("CHANNELS", "fencelock.*")) as string[]).length;
    // A long wait keeps the subscriber connection open; its channel is subscribed once, slowly.
    rig.proxy.subscriberDelayMs = 3_500; // longer than a stream outlives its last wait (2 s)
    const long = createLocks({ redis, prefix }).acquire("long", { waitMs: 20_000 });
    await until(async () => (await channels()) === 1, 10_000);
    // Another lock set's wait gives up before its SUBSCRIBE is answered.
    await expect(createLocks({ redis, prefix }).acquire("short", { waitMs: 300 })).rejects.toThrow(/stayed busy/);
    await until(async () => (await channels()) === 2, 10_000); // the server has it at once; its answer is slow
    await until(async () => (await channels()) === 1, 10_000);
    await held[0]!.release();
    await (await long).release();
    await held[1]!.release();
    close();
    admin.disconnect();
  });
});
