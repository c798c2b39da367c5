import { describe, expect, it } from "vitest";
import { createLocks, LockUnavailableError, type Lease, type Locks, type RedisClient } from "../../src/index.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/**
 * The real client, except that while `garbage.reply` is set every script call runs on the real
 * server and its reply is then replaced with that value: an endpoint or proxy that answers
 * something other than fencelock's script replies. A stub is fine here: what is tested is how
 * the reply's shape is read, not Lua.
 */
function garbling(garbage: { reply: unknown }): RedisClient {
  const real = upstash();
  const swap = async (reply: Promise<unknown>) => {
    const value = await reply;
    return garbage.reply === undefined ? value : garbage.reply;
  };
  return {
    evalsha: (sha, keys, args) => swap(real.evalsha(sha, keys, args)),
    eval: (script, keys, args) => swap(real.eval(script, keys, args)),
  };
}

async function outcomeOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then((value) => ({ resolved: value }), (error: unknown) => error);
}

// An array of integers passes runScript's and integers()'s checks whatever its length, and the
// destructuring defaults in attempt.ts, leaseBackend and inspect() then read a short one as "busy",
// "lost", "expired" or "free": a garbage reply is confused with a lock state, which the README
// rules out ("LockUnavailableError ... never confused with busy").
describe("a reply that is not a script reply of ours (an empty array)", () => {
  const setup = async () => {
    const garbage: { reply: unknown } = { reply: undefined };
    const prefix = uniquePrefix("garbage");
    const locks: Locks = createLocks({ redis: garbling(garbage), prefix });
    const observer = createLocks({ redis: upstash(), prefix });
    const lease: Lease = await locks.acquire("held");
    garbage.reply = [];
    return { locks, observer, lease };
  };

  // The real acquire ran and took "free"; answering null also leaves that hold to sit out its lease.
  it("makes tryAcquire fail with LockUnavailableError, not answer null (busy)", async () => {
    const { locks, lease } = await setup();
    const outcome = await outcomeOf(locks.tryAcquire("free"));
    expect(outcome).toBeInstanceOf(LockUnavailableError);
    await lease.release().catch(() => undefined);
  });

  it("makes heartbeat fail with LockUnavailableError and keeps the lease, not LockLostError for a lease still held", async () => {
    const { observer, lease } = await setup();
    const outcome = await outcomeOf(lease.heartbeat());
    // Redis still holds it for this owner...
    expect(await observer.inspect("held")).toMatchObject({ held: true, fence: lease.fence });
    // ...so "no longer held: it expired or passed to another holder" is false, and final.
    expect(outcome).toBeInstanceOf(LockUnavailableError);
    expect(lease.remainingMs()).toBeGreaterThan(0);
  });

  it("makes release fail with LockUnavailableError, not report 'expired' (here Redis did release it)", async () => {
    const { lease } = await setup();
    const outcome = await outcomeOf(lease.release());
    expect(outcome).toBeInstanceOf(LockUnavailableError);
  });

  it("makes inspect fail with LockUnavailableError, not report a held lock as free", async () => {
    const { locks, observer, lease } = await setup();
    expect((await observer.inspect("held")).held).toBe(true);
    const outcome = await outcomeOf(locks.inspect("held"));
    expect(outcome).toBeInstanceOf(LockUnavailableError);
    await lease.release().catch(() => undefined);
  });
});

// redis.ts picks its hint by testing the message for /unauthori[sz]ed|WRONGPASS|401/ first, so any
// "401" inside a number or a host name (a size, a port, an Upstash host such as …-34017.upstash.io,
// a script SHA-1 in Redis 7's "script: <sha1>, on @user_script" suffix) reads as a refused token.
describe("the hint in a LockUnavailableError", () => {
  it.each([
    [
      "a reply over the size limit whose size contains 401",
      "Command failed: ERR max request size exceeded. Limit: 10485760 bytes, Actual: 10540123 bytes",
      /the value is too large/,
    ],
    [
      "a network error naming an Upstash host whose number contains 401",
      "error sending request for url (https://eu1-brave-cat-34017.upstash.io/pipeline): client error (Connect): Connection refused",
      /check the Redis URL, token and network/,
    ],
  ])("is not 'the token was refused' for %s", async (_, message, hint) => {
    // A client standing in for @upstash/redis' error; the message mapping is what is tested.
    const failing = async () => {
      throw new Error(message);
    };
    const error = await outcomeOf(createLocks({ redis: { evalsha: failing, eval: failing } }).tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).not.toMatch(/token was refused/);
    expect((error as Error).message).toMatch(hint);
  });
});
