// hashTag: a lock placed in the Cluster slot of the caller's keys, its name still kept apart from others'.
import { describe, expect, it } from "vitest";
import { createLocks, LockConfigError } from "../../../src/index.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

const lockKeysUnder = async (prefix: string) => (await upstash().keys(`${prefix}:*`)).filter((key) => key.endsWith(":lock")).sort();

describe("a lock set with hashTag", () => {
  it("keys each lock under the tag it returns, with the name after it", async () => {
    const prefix = uniquePrefix("tag");
    const locks = createLocks({ redis: upstash(), prefix, hashTag: (name) => name.split("/")[0]! });
    const lease = await locks.acquire("user:42/charge");
    expect(await lockKeysUnder(prefix)).toEqual([`${prefix}:{user:42}:user:42/charge:lock`]);
    expect((await locks.inspect("user:42/charge")).fence).toBe(lease.fence);
    await lease.release();
    expect((await locks.inspect("user:42/charge")).held).toBe(false);
  });

  it("keeps names apart that the tag shares, braces and escapes included", async () => {
    const prefix = uniquePrefix("tag-apart");
    const locks = createLocks({ redis: upstash(), prefix, hashTag: () => "shared" });
    const names = ["a}", "a%7D", "a", "a:lock", "}:a"];
    const leases = await Promise.all(names.map((name) => locks.tryAcquire(name)));
    expect(leases.every((lease) => lease !== null)).toBe(true);
    expect(await lockKeysUnder(prefix)).toHaveLength(names.length);
    // Every key's hash tag is the chosen one: the first "{…}" of each key.
    for (const key of await lockKeysUnder(prefix)) expect(/\{([^}]*)\}/.exec(key)?.[1]).toBe("shared");
  });

  it("never meets a lock set on the same prefix without one", async () => {
    const prefix = uniquePrefix("tag-vs-plain");
    const tagged = createLocks({ redis: upstash(), prefix, hashTag: (name) => name });
    const plain = createLocks({ redis: upstash(), prefix });
    expect(await tagged.tryAcquire("job")).not.toBeNull();
    expect(await plain.tryAcquire("job")).not.toBeNull();
  });

  it.each([
    ["an empty tag", () => ""],
    ["a tag with a brace", () => "user}42"],
    ["a tag that is no string", () => 42 as unknown as string],
    ["a tag over 512 characters", () => "t".repeat(513)],
    ["a bigint", () => 42n as unknown as string],
  ])("refuses %s before anything reaches Redis, and says what a tag must be", async (_, hashTag) => {
    const prefix = uniquePrefix("tag-bad");
    const locks = createLocks({ redis: upstash(), prefix, hashTag });
    for (const call of [() => locks.acquire("job"), () => locks.tryAcquire("job"), () => locks.inspect("job")]) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(LockConfigError);
      expect((error as Error).message).toMatch(/^Invalid (lock name|hashTag): hashTag returned .* for "job": expected 1-512 characters without \{ or \}/);
    }
    expect(() => locks.resume({ name: "job", owner: "a".repeat(32), fence: 5 })).toThrow(LockConfigError);
    expect(await upstash().keys(`${prefix}:*`)).toEqual([]);
  });

  it("must be a function", () => {
    expect(() => createLocks({ redis: upstash(), hashTag: "user:42" as unknown as () => string })).toThrow(/hashTag: expected a function/);
  });
});
