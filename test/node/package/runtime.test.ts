import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const srcRoot = new URL("../../../src/", import.meta.url);

/** Every source file that must run on Workers, Deno and Node alike (all but src/local/). */
function edgeSources(): { file: string; text: string }[] {
  return readdirSync(srcRoot, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.startsWith("local"))
    .map((file) => ({ file, text: readFileSync(new URL(file, srcRoot), "utf8") }));
}

describe("toolchain", () => {
  it("runs the tests on Node 22 from node_modules, not the machine's Node 20", () => {
    expect(process.version).toMatch(/^v22\./);
  });
});

describe("edge-safe sources", () => {
  it.each(edgeSources().map((s) => [s.file, s.text]))("%s uses Web APIs only", (_, text) => {
    expect(text).not.toMatch(/from ["']node:/);
    expect(text).not.toMatch(/\bBuffer\b|\bprocess\./);
    expect(text).not.toMatch(/from ["']zod["']/);
  });
});
