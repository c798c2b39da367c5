import { describe, expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../src/index.ts";
import { lockKeys } from "../../src/keys.ts";
import { scriptSha1, type WakeSubscriber } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { sleep } from "../../src/wait.ts";
import { counting, splittingEventStreams, withFetch } from "../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

interface Tweaks {
  /** Hold back the subscription's confirmation this long. */
  confirmAfterMs?: number;
  /** Drop every message, as a lost stream would. */
  dropMessages?: boolean;
  /** Never confirm the subscription, as a proxy that buffers the event stream would. */
  neverConfirm?: boolean;
}

/** The real client, with its subscription stream observed and optionally disturbed. */
function observedRedis(tweaks: Tweaks = {}) {
  const real = upstash();
  const seen = { subscribed: 0, unsubscribed: 0 };
  /** Channels subscribed to, and the events the waiter was given. */
  const heard = { channels: [] as string[], confirmations: 0, messages: 0 };
  const client: RedisClient = {
    evalsha: (sha, keys, args) => real.evalsha(sha, keys, args),
    eval: (script, keys, args) => real.eval(script, keys, args),
    subscribe(channel): WakeSubscriber {
      const subscriber = real.subscribe(channel);
      seen.subscribed++;
      heard.channels.push(channel);
      return {
        on(type, listener) {
          if (type === "message" && tweaks.dropMessages) return;
          if (type === "subscribe" && tweaks.neverConfirm) return;
          const counted = (event: unknown) => {
            if (type === "subscribe") heard.confirmations++;
            if (type === "message") heard.messages++;
            listener(event);
          };
          const delayed = (event: unknown) => void sleep(tweaks.confirmAfterMs ?? 0).then(() => counted(event));
          subscriber.on(type, type === "subscribe" && tweaks.confirmAfterMs ? delayed : counted);
        },
        async unsubscribe() {
          seen.unsubscribed++;
          await subscriber.unsubscribe();
        },
      };
    },
  };
  return { client, seen, heard };
}

async function heldLock(prefix: string, leaseMs = 10_000) {
  return createLocks({ redis: upstash(), prefix, leaseMs }).acquire("gate");
}

describe("push wake-ups", () => {
  it("wakes a waiter on release with a handful of requests, however long the wait", async () => {
    const prefix = uniquePrefix("push");
    const holder = await heldLock(prefix);
    const { client, seen } = observedRedis();
    const requests = { n: 0 };
    const lease = await withFetch(counting(requests), async () => {
      setTimeout(() => void holder.release(), 1_500);
      return createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    });
    expect(lease.fence).toBeGreaterThan(holder.fence);
    // attempt, subscribe stream, attempt after confirmation, one attempt a second to keep its
    // place, and the release, which hands the lock over (EVALSHA, and EVAL if its script is not
    // loaded yet): polling would make about ten in 1.5 s.
    expect(requests.n).toBeLessThanOrEqual(6);
    // Closed just after the caller has its lease, so as not to delay the handover.
    await vi.waitFor(() => expect(seen).toEqual({ subscribed: 1, unsubscribed: 1 }));
    await lease.release();
  });

  // @upstash/redis 1.35.1-1.36.0 split each read of the stream on "\n" and dropped what did not
  // start with "data: ": in workerd every handover was lost, and push waits silently polled (the
  // workerd-guard push test needs 3 attempts with them, 2 from 1.36.1 on, which keeps the rest).
  it("is handed the lock when the stream's events reach the client split across reads, as in workerd", async () => {
    const prefix = uniquePrefix("push-split");
    const holder = await heldLock(prefix);
    const { client, heard } = observedRedis();
    const lease = await withFetch(splittingEventStreams, async () => {
      const waiting = createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
      waiting.catch(() => undefined); // awaited below; not unhandled if the wait for the confirmation fails
      await vi.waitFor(() => expect(heard.confirmations).toBe(1), { timeout: 3_000 });
      await holder.release();
      return waiting;
    });
    expect(lease.fence).toBeGreaterThan(holder.fence);
    expect(heard).toMatchObject({ confirmations: 1, messages: 1 });
    await lease.release();
  });

  it("catches a release that happens before the subscription is confirmed", async () => {
    const prefix = uniquePrefix("push-early");
    const holder = await heldLock(prefix);
    const { client } = observedRedis({ confirmAfterMs: 400 });
    setTimeout(() => void holder.release(), 150);
    const started = performance.now();
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    // Not the holder's 10 s TTL: the attempt right after confirmation found the lock free.
    expect(performance.now() - started).toBeLessThan(3_000);
    await lease.release();
  });

  it("falls back to the holder's TTL when the message is lost", async () => {
    const prefix = uniquePrefix("push-lost");
    const holder = await heldLock(prefix, 1_000);
    const { client } = observedRedis({ dropMessages: true });
    setTimeout(() => void holder.release(), 100);
    const started = performance.now();
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThan(600); // it did sleep on the hinted TTL...
    expect(waited).toBeLessThan(4_000); // ...and not the whole waitMs
    await lease.release();
  });

  it("keeps looking at least every second while its stream never confirms", async () => {
    const prefix = uniquePrefix("push-unconfirmed");
    const holder = await heldLock(prefix);
    const { client } = observedRedis({ neverConfirm: true });
    setTimeout(() => void holder.release(), 300);
    const started = performance.now();
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    // Not the whole waitMs: the release handed it the lock, and its next look found it.
    expect(performance.now() - started).toBeLessThan(3_000);
    await lease.release();
  });

  it("polls with backoff, not at once, when the client cannot subscribe", async () => {
    const prefix = uniquePrefix("push-nostream");
    const holder = await heldLock(prefix);
    const real = upstash();
    const sentAt: number[] = [];
    // A client of its own with the two calls fencelock needs, and no SUBSCRIBE.
    const client: RedisClient = {
      evalsha: (sha, keys, args) => (sentAt.push(performance.now()), real.evalsha(sha, keys, args)),
      eval: (script, keys, args) => real.eval(script, keys, args),
    };
    setTimeout(() => void holder.release(), 500);
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push" });
    await lease.release();
    expect((sentAt[1] ?? 0) - (sentAt[0] ?? 0)).toBeGreaterThanOrEqual(40); // the shortest backoff is 50 ms
  });

  it("gets a lock that expires without a release", async () => {
    const prefix = uniquePrefix("push-expiry");
    await heldLock(prefix, 600);
    const { client } = observedRedis();
    const lease = await createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 5_000, wake: "push" });
    expect(lease.fence).toBeGreaterThan(0);
    await lease.release();
  });

  it("looks again within 50 ms, not after a second, when a hold it took came too late to use", async () => {
    const prefix = uniquePrefix("push-late");
    await heldLock(prefix, 600); // expires without a release: no message will come
    const real = upstash();
    const [acquireSha1, leaveSha1] = await Promise.all([scriptSha1(scripts.acquire), scriptSha1(scripts.leave)]);
    const sent: { script: string; at: number }[] = [];
    let slowed = false;
    const client: RedisClient = {
      async evalsha(sha, keys, args) {
        sent.push({ script: sha === acquireSha1 ? "acquire" : sha === leaveSha1 ? "leave" : "other", at: performance.now() });
        const reply = await real.evalsha(sha, keys, args);
        // The first attempt to find the lock free gets its reply after 380 of its 400 ms: given back.
        if (sha === acquireSha1 && Array.isArray(reply) && reply[0] === 1 && !slowed) {
          slowed = true;
          await sleep(380);
        }
        return reply;
      },
      eval: (script, keys, args) => real.eval(script, keys, args),
      subscribe: (channel) => real.subscribe(channel),
    };
    const lease = await createLocks({ redis: client, prefix, leaseMs: 400 }).acquire("gate", { waitMs: 5_000, wake: "push" });
    await lease.release();
    const gaveBack = sent.findIndex((call) => call.script === "leave");
    expect(gaveBack).toBeGreaterThan(0);
    const next = sent.slice(gaveBack + 1).find((call) => call.script === "acquire");
    expect(next).toBeDefined();
    // The lock is free: waiting for a message (a second) would be waiting for nothing.
    expect((next?.at ?? 0) - (sent[gaveBack]?.at ?? 0)).toBeLessThan(500);
  });

  it("closes the stream when the wait is aborted", async () => {
    const prefix = uniquePrefix("push-abort");
    const holder = await heldLock(prefix);
    const { client, seen } = observedRedis();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 300);
    await expect(
      createLocks({ redis: client, prefix }).acquire("gate", { waitMs: 8_000, wake: "push", signal: controller.signal }),
    ).rejects.toThrow("client went away");
    await vi.waitFor(() => expect(seen).toEqual({ subscribed: 1, unsubscribed: 1 }));
    await holder.release();
  });

  it("opens no stream when the lock is free", async () => {
    const { client, seen } = observedRedis();
    const lease = await createLocks({ redis: client, prefix: uniquePrefix("push-free") }).acquire("gate", { wake: "push" });
    expect(seen.subscribed).toBe(0);
    await lease.release();
  });

  it("listens on a channel of its own, the one release.lua publishes its handover on, safe in a URL path", async () => {
    const prefix = uniquePrefix("push-channel");
    const name = "order:{42}/%7B ü,x?#";
    const holder = await createLocks({ redis: upstash(), prefix }).acquire(name);
    const { client, heard } = observedRedis();
    const waiting = createLocks({ redis: client, prefix }).acquire(name, { waitMs: 5_000, wake: "push" });
    await vi.waitFor(() => expect(heard.channels).toHaveLength(1));
    const [sha1, ticket] = heard.channels[0]?.split(".") ?? [];
    // release.lua's redis.sha1hex(lock key), then the waiter's ticket: 73 characters, whatever the name.
    expect(sha1).toBe(await upstash().eval("return redis.sha1hex(KEYS[1])", [lockKeys(prefix, name).lock], []));
    expect(ticket).toMatch(/^[0-9a-f]{32}$/);
    await holder.release();
    await (await waiting).release();
  });

  it("sends a handover down the heir's stream only, however many wait", async () => {
    const prefix = uniquePrefix("push-only-heir");
    const holder = await heldLock(prefix);
    const [heir, next] = [observedRedis(), observedRedis()];
    const inspector = createLocks({ redis: upstash(), prefix });
    const first = createLocks({ redis: heir.client, prefix }).acquire("gate", { waitMs: 5_000, wake: "push" });
    await vi.waitFor(() => expect(heir.heard.confirmations).toBe(1));
    const second = createLocks({ redis: next.client, prefix }).acquire("gate", { waitMs: 5_000, wake: "push" });
    await vi.waitFor(() => expect(next.heard.confirmations).toBe(1));
    expect(await inspector.inspect("gate")).toMatchObject({ waiters: 2 });
    await holder.release();
    const lease = await first;
    await sleep(200); // time for any message to reach the second stream
    expect([heir.heard.messages, next.heard.messages]).toEqual([1, 0]);
    await lease.release();
    await (await second).release();
  });
});
