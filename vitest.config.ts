import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/node/**/*.test.ts", "test/faults/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Generous: tests that compile, bundle or start workerd and Deno must not fail on time alone
    // while other work keeps both cores busy. A hung test still fails, later.
    testTimeout: 120_000,
    // Most of the run is waiting (leases, TTLs, servers starting), not CPU: two files at a time
    // halve it on two cores, where vitest's default would run one.
    maxWorkers: 2,
    hookTimeout: 180_000,
  },
});
