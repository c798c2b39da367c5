import { describe, expect, it } from "vitest";
import { createLocks } from "../../src/index.ts";
import { guardFetch } from "../../src/worker.ts";
import { countingAcquires } from "../support/counting-client.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

describe("guardFetch", () => {
  it('with wake: "push", a waiting request is handed the lock by the release, with no attempt after it', async () => {
    const prefix = uniquePrefix("guard-push");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("report");
    const { client, attempts } = await countingAcquires();
    const locks = createLocks({ redis: client, prefix });
    const handler = guardFetch(
      { locks: () => locks, name: () => "report", waitMs: 5_000, wake: "push" },
      (_request, _env, _ctx, lease) => Response.json({ fence: lease.fence }),
    );
    const response = handler(new Request("http://localhost/report"), {}, { waitUntil: () => undefined });
    // The first attempt, and the one after the stream confirmed; the next would be a second later.
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    const { fence } = (await (await response).json()) as { fence: number };
    expect(fence).toBeGreaterThan(holder.fence);
    expect(attempts.n).toBe(2);
    expect((await locks.inspect("report")).held).toBe(false);
  });
});
