import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nameTag } from "../../../src/core/keys.ts";
import { lockKeys } from "../../support/lock-keys.ts";

/** The part of a key Redis Cluster hashes: between the first "{" and the next "}". */
function hashTag(key: string): string {
  const open = key.indexOf("{");
  return key.slice(open + 1, key.indexOf("}", open + 1));
}

describe("key layout", () => {
  it("puts both keys of a lock in one hash tag, whatever the name", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }), (name) => {
        const keys = lockKeys("app", name);
        for (const key of [keys.fence, keys.queue, keys.alive]) expect(hashTag(key)).toBe(hashTag(keys.lock));
        expect(`app:{${hashTag(keys.lock)}}`).toBe(nameTag("app", name));
        expect(hashTag(keys.lock)).not.toMatch(/[{}]/);
      }),
    );
  });

  it("maps distinct names to distinct keys", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 12 }), fc.string({ unit: "binary", maxLength: 12 }), (a, b) => {
        fc.pre(a !== b);
        expect(nameTag("app", a)).not.toBe(nameTag("app", b));
      }),
    );
    expect(nameTag("app", "{")).not.toBe(nameTag("app", "%7B"));
    // Pinned: locks already held under a name must keep their keys across versions.
    expect(lockKeys("app", "a%{b}ü").lock).toBe("app:{a%25%7Bb%7Dü}:lock");
    expect(lockKeys("app", "a}:lock").lock).toBe("app:{a%7D:lock}:lock");
  });

  it("keeps ordinary names readable", () => {
    expect(lockKeys("shop", "order:42")).toMatchObject({ lock: "shop:{order:42}:lock", fence: "shop:{order:42}:fence" });
  });
});
