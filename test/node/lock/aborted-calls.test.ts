// acquire and tryAcquire aborted by their signal while an attempt is out: the signal's reason wins.
import { describe, expect, it } from "vitest";
import { createLocks, type Locks, type RedisClient } from "../../../src/index.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { delayingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { lockSet } from "../../support/lock-set.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("an aborted call", () => {
  // The only attempt's reply arrives 600 ms later: past waitMs, and after the abort.
  it.each([
    [
      "acquire, when it aborts during the last attempt (not LockTimeoutError)",
      (locks: Locks, signal: AbortSignal) => locks.acquire("job", { waitMs: 200, signal }),
    ],
    [
      "tryAcquire, when it aborts while the attempt finds the lock busy (not null)",
      (locks: Locks, signal: AbortSignal) => locks.tryAcquire("job", { signal }),
    ],
  ])("rejects %s with the signal's reason", async (_, call) => {
    const prefix = uniquePrefix("abort-last");
    const holder = await lockSet(prefix).acquire("job");
    const locks = lockSet(prefix);
    await (await locks.tryAcquire("warm"))?.release(); // scripts loaded
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 100);
    const outcome = await withFetch(delayingResponses(600, 1), () => call(locks, controller.signal).catch((error: unknown) => error));
    expect(controller.signal.aborted).toBe(true);
    expect(outcome).toBe(controller.signal.reason);
    await holder.release();
  });
});

describe("an aborted call while Redis is too slow to answer", () => {
  it("rejects with the signal's reason, not with LockUnavailableError from the attempt that was out", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("abort-slow"), timeoutMs: 500 });
    await (await locks.tryAcquire("warm"))?.release(); // scripts loaded
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 100);
    // Redis answers after 2 s: the attempt out at the abort then fails by timeoutMs.
    const outcome = await withFetch(delayingResponses(2_000), () =>
      locks.acquire("job", { waitMs: 5_000, signal: controller.signal }).catch((error: unknown) => error));
    expect(controller.signal.aborted).toBe(true);
    expect(outcome).toBe(controller.signal.reason);
  });
});

describe("a call aborted while its granting attempt is out", () => {
  it.each(["acquire", "tryAcquire"] as const)("%s rejects with the signal's reason, and gives the hold back", async (method) => {
    const prefix = uniquePrefix("abort-grant");
    const real = upstash();
    await real.scriptLoad(scripts.acquire.text);
    const controller = new AbortController();
    // Redis grants the lock; the caller aborts before the reply reaches it.
    const abortingOnGrant: RedisClient = {
      evalsha: async (sha, keys, args) => {
        const reply = await real.evalsha(sha, keys, args);
        if (sha === scriptSha1(scripts.acquire)) controller.abort(new Error("client went away"));
        return reply;
      },
      eval: (text, keys, args) => real.eval(text, keys, args),
    };
    const outcome = await createLocks({ redis: abortingOnGrant, prefix })[method]("job", { signal: controller.signal }).catch((error: unknown) => error);
    expect(outcome).toBe(controller.signal.reason);
    expect((await lockSet(prefix).inspect("job")).held).toBe(false);
  });
});

describe("a call that gives up its place in line", () => {
  // As a call gives up, its process often shuts down: the EVAL after a NOSCRIPT might never go.
  it("sends its leave in one request, as text, never EVALSHA first", async () => {
    const prefix = uniquePrefix("leave-as-text");
    const holder = await lockSet(prefix).acquire("job");
    const real = upstash();
    const sent: string[] = [];
    const leaveSha1 = scriptSha1(scripts.leave);
    const redis: RedisClient = {
      evalsha: (sha, keys, args) => (sent.push(sha === leaveSha1 ? "EVALSHA leave" : "EVALSHA"), real.evalsha(sha, keys, args)),
      eval: (text, keys, args) => (sent.push(text === scripts.leave.text ? "EVAL leave" : "EVAL"), real.eval(text, keys, args)),
    };
    const controller = new AbortController();
    const waiting = createLocks({ redis, prefix }).acquire("job", { waitMs: 10_000, wake: "poll", signal: controller.signal });
    await until(async () => (await lockSet(prefix).inspect("job")).waiters === 1, 5_000);
    controller.abort();
    await waiting.catch(() => undefined);
    await until(async () => (await lockSet(prefix).inspect("job")).waiters === 0, 5_000);
    expect(sent.filter((call) => call.endsWith("leave"))).toEqual(["EVAL leave"]);
    await holder.release();
  });
});
