// Fenced writes whose request failed, whose reply was lost or that timed out: a retry or a late
// arrival never lands over a later write, and is told the truth about the first.
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockUnavailableError } from "../../../../src/index.ts";
import { sleep } from "../../../../src/waiting/backoff.ts";
import { withFetch } from "../../../support/fetch-wrappers.ts";
import { setup } from "../../../support/locks-and-store.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("fenced store", () => {
  // What lets a retry of a write whose reply was lost be told the truth (see below).
  it("leaves one record per write, for a minute, and none for a claim or a read", async () => {
    const { redis, prefix, store } = setup("write-record");
    await store.write("doc", 1, 1);
    await store.claim("doc", 2);
    await store.read("doc", { fence: 2 });
    await store.read("doc");
    const records = await redis.keys(`${prefix}:{doc}:written:*`);
    expect(records).toHaveLength(1);
    expect(await redis.pttl(records[0] ?? "")).toBeGreaterThan(50_000);
    expect(await redis.pttl(records[0] ?? "")).toBeLessThanOrEqual(60_000);
  });

  it("with a client that does not retry, a write whose request failed never lands after the next one", async () => {
    const prefix = uniquePrefix("no-retry");
    const warm = createFencedStore({ redis: upstash(), prefix });
    // The first write fails at once, by the fault below: the second needs time, not the first.
    const store = createFencedStore({ redis: upstash({ retry: false }), prefix, timeoutMs: 1_000 });
    const fence = 1_785_000_000_000_000;
    await warm.write("doc", "v0", fence); // script loaded
    let failed = 0;
    await withFetch(
      (real) => async (input, init) => {
        if (String(init?.body).includes("first") && failed++ < 2) throw new TypeError("fetch failed: connection reset");
        return real(input, init);
      },
      async () => {
        await expect(store.write("doc", "first", fence)).rejects.toBeInstanceOf(LockUnavailableError);
        await store.write("doc", "second", fence); // the same holder writes again
        await sleep(400); // a retrying client would send "first" again by now (after 50 + 136 ms)
      },
    );
    expect((await warm.read("doc"))?.value).toBe("second");
  });
});

describe("a fenced write retried after its reply was lost", () => {
  // The write reached Redis and was applied; its reply was lost, and @upstash/redis will send the
  // same request again. `meanwhile` runs in that gap, before the retry goes out.
  const replyLostThen = (meanwhile: () => Promise<unknown>, done: { n: number }) =>
    (real: typeof fetch): typeof fetch => async (input, init) => {
      const response = await real(input, init);
      if (done.n > 0 || !String(init?.body).includes("paid by A")) return response;
      done.n++;
      await response.text();
      await meanwhile();
      throw new TypeError("fetch failed: connection reset after the request was sent");
    };

  it("is told accepted, not stale, when the next holder claimed the resource before the retry", async () => {
    const { locks, store } = setup("write-retry-claimed", 200);
    await store.write("invoice:7", { paid: false }, 1); // script loaded
    const a = await locks.acquire("invoice:7");
    let seenByB: unknown;
    const gap = { n: 0 };
    const outcome = await withFetch(
      replyLostThen(async () => {
        await sleep(250); // A's lease lapses; B takes over and builds on what A wrote
        await locks.withLock("invoice:7", async (b) => {
          seenByB = (await store.read("invoice:7", { fence: b.fence }))?.value;
        });
      }, gap),
      () => store.write("invoice:7", { paid: "paid by A" }, a.fence).then(() => "accepted", (e: unknown) => e),
    );
    expect(gap.n).toBe(1);
    expect(seenByB).toEqual({ paid: "paid by A" });
    // StaleFenceError would tell A its write was refused, and A might undo what B built on.
    expect(outcome).toBe("accepted");
  });

  it("does not write its value again over the same holder's next write", async () => {
    const { locks, store } = setup("write-retry-again");
    const lease = await locks.acquire("invoice:8");
    await store.write("invoice:8", "draft", lease.fence); // script loaded
    const gap = { n: 0 };
    await withFetch(
      // Another task of the same holder writes next, while the first write's retry is pending.
      replyLostThen(() => store.write("invoice:8", "refunded by A", lease.fence), gap),
      () => store.write("invoice:8", "paid by A", lease.fence),
    );
    expect(gap.n).toBe(1);
    expect(await store.read("invoice:8")).toEqual({ value: "refunded by A", fence: lease.fence });
    await lease.release();
  });
});

describe("a fenced write that timed out", () => {
  // timeoutMs cannot withdraw a request already sent: a slow one lands after the call failed, with
  // the fence of the holder's next write. A new lease's higher fence is what makes it stale.
  it("may still land later, but never over a write made under the next lease", async () => {
    const prefix = uniquePrefix("slow-write");
    const locks = createLocks({ redis: upstash(), prefix });
    const warm = createFencedStore({ redis: upstash(), prefix });
    // Under the 400 ms the first write is held back, with room for the second on a busy machine.
    const store = createFencedStore({ redis: upstash({ retry: false }), prefix, timeoutMs: 250 });
    await warm.write("warm", "v0", 1); // script loaded
    await withFetch(
      (real) => async (input, init) => {
        if (String(init?.body).includes("first")) await sleep(400); // slow on its way to Redis
        return real(input, init);
      },
      async () => {
        const lease = await locks.acquire("doc");
        await expect(store.write("doc", "first", lease.fence)).rejects.toBeInstanceOf(LockUnavailableError);
        await lease.release();
        const next = await locks.acquire("doc");
        await store.write("doc", "second", next.fence);
        await sleep(600); // "first" reaches Redis now, and is refused as stale
        await next.release();
      },
    );
    expect((await warm.read("doc"))?.value).toBe("second");
  });
});
