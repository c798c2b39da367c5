import { describe, expect, it } from "vitest";
import { measureAll } from "../../../scripts/size.ts";

describe("bundle size (npm run size)", () => {
  it("keeps the example worker and the core library within their gzip budgets", async () => {
    const rows = await measureAll();
    for (const row of rows.filter((r) => r.budgetBytes !== undefined)) {
      expect.soft(row.gzipBytes, row.name).toBeLessThanOrEqual(row.budgetBytes ?? 0);
    }
    // The core never pulls in its peers: a bundle with them is much bigger.
    const core = rows.find((r) => r.name.startsWith("core:"));
    const withZod = rows.find((r) => r.name.startsWith("core with zod"));
    expect(core && withZod && withZod.gzipBytes - core.gzipBytes).toBeGreaterThan(3_000);
  });
});
