// The SHA-1 that names scripts for EVALSHA and checks push handovers: plain JavaScript, so it must
// be SHA-1 exactly, as Redis (SCRIPT LOAD, redis.sha1hex) and Web Crypto compute it.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha1Hex } from "../../../src/core/sha1.ts";

const reference = (text: string) => createHash("sha1").update(text).digest("hex");
const subtle = async (text: string) =>
  Buffer.from(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text))).toString("hex");

describe("sha1Hex", () => {
  it("gives FIPS 180's own example, and what Web Crypto gives for UTF-8 text", async () => {
    expect(sha1Hex("abc")).toBe("a9993e364706816aba3e25717850c26c9cd0d89d");
    for (const text of ["", "1700000000000002:fedcba9876543210fedcba9876543210", "é ✓ 𝄞", "ü".repeat(300)]) {
      expect(sha1Hex(text)).toBe(await subtle(text));
    }
  });

  it("is right at every length across the block boundaries (55/56 bytes, 64, 119/120 ...)", () => {
    for (let n = 0; n <= 200; n++) {
      const text = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7 + n) % 90))).join("");
      expect(sha1Hex(text), `length ${n}`).toBe(reference(text));
    }
  });
});
