import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../../../bench/overhead.ts", import.meta.url));

// The overhead bench calls the scripts itself, with the lock's keys: it must keep up with them.
describe("npm run bench:overhead", () => {
  it("runs every variant and prints its table (BENCH_QUICK=1: a few rounds)", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [script], { env: { ...process.env, BENCH_QUICK: "1" } });
    for (const variant of ["fencelock", "its scripts alone", "raw floor", "@upstash/lock"]) {
      expect(stdout).toMatch(new RegExp(`^\\| ${variant} \\| [0-9.]+ \\|`, "m"));
    }
    expect(stdout).toMatch(/^fencelock's own code, against a client that answers at once: [0-9.]+ µs a cycle$/m);
  });
});
