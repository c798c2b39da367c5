import { describe, expect, it } from "vitest";
import { createLocks, type RedisClient } from "../../src/index.ts";
import { scriptSha1 } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { guardFetch } from "../../src/worker.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/** The real client, with its acquire attempts counted. */
async function countingClient() {
  const real = upstash();
  const acquireSha1 = await scriptSha1(scripts.acquire);
  const attempts = { n: 0 };
  const client: RedisClient = {
    evalsha: (sha, keys, args) => ((attempts.n += sha === acquireSha1 ? 1 : 0), real.evalsha(sha, keys, args)),
    eval: (text, keys, args) => real.eval(text, keys, args),
    subscribe: (channel) => real.subscribe(channel),
  };
  return { client, attempts };
}

describe("guardFetch", () => {
  it('with wake: "push", a waiting request is handed the lock by the release, with no attempt after it', async () => {
    const prefix = uniquePrefix("guard-push");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("report");
    const { client, attempts } = await countingClient();
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
