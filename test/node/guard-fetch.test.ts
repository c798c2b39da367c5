import { describe, expect, it } from "vitest";
import { createLocks } from "../../src/index.ts";
import { guardFetch } from "../../src/worker.ts";
import { sleep } from "../../src/wait.ts";
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

  it("holds the lock until a streamed body has been sent, and keeps the lease's signal live meanwhile", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-body") });
    const pending: Promise<unknown>[] = [];
    const handler = guardFetch({ locks: () => locks, name: () => "report" }, (_request, _env, _ctx, lease) =>
      new Response(new ReadableStream<Uint8Array>({
        async pull(controller) {
          await sleep(300); // still producing the body after the handler returned
          if (lease.signal.aborted) controller.error(lease.signal.reason);
          else controller.enqueue(new TextEncoder().encode(`fence ${lease.fence}`)), controller.close();
        },
      })));
    const ctx = { waitUntil: (work: Promise<unknown>) => void pending.push(work) };
    const response = await handler(new Request("http://localhost/report"), {}, ctx);
    expect((await locks.inspect("report")).held).toBe(true);
    expect((await handler(new Request("http://localhost/report"), {}, ctx)).status).toBe(423);
    expect(await response.text()).toMatch(/^fence \d+$/);
    await Promise.all(pending); // the release, handed to waitUntil so the isolate lives until it is done
    expect((await locks.inspect("report")).held).toBe(false);
  });
});

