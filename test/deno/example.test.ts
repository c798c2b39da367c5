// The Deno.serve example (examples/deno/server.ts): its app, served here on a free port.
import assert from "node:assert/strict";
import { createApp } from "../../examples/deno/server.ts";
import { redisFromEnv, serve, sleep, uniquePrefix, untilInside } from "./support.ts";

const run = (base: string, job: string) => fetch(`${base}/jobs/${job}/run`, { method: "POST" });
const status = async (base: string, job: string) => {
  const res = await fetch(`${base}/jobs/${job}`);
  return { status: res.status, body: await res.json() };
};

Deno.test("example: a job runs once at a time; a concurrent run gets 423 with Retry-After; runs are counted under rising fences", async () => {
  const entered = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  let calls = 0;
  const app = createApp({
    redis: redisFromEnv(),
    prefix: uniquePrefix("example"),
    work: async () => {
      if (calls++ === 0) {
        entered.resolve();
        await gate.promise;
      }
    },
  });
  await using server = serve(app.fetch);
  assert.equal((await status(server.url, "nightly")).status, 404);

  const first = run(server.url, "nightly");
  try {
    await untilInside(entered.promise, first);
    const busy = await run(server.url, "nightly");
    assert.equal(busy.status, 423);
    assert.ok(Number(busy.headers.get("Retry-After")) >= 1);
    await busy.body?.cancel();
    const otherJob = await run(server.url, "weekly");
    assert.equal(otherJob.status, 200, "another job is not blocked");
    await otherJob.body?.cancel();
  } finally {
    gate.resolve();
  }
  const done = await first;
  assert.equal(done.status, 200);
  const one = await done.json();
  assert.equal(one.job, "nightly");
  assert.equal(one.runs, 1);
  assert.ok(Number.isSafeInteger(one.fence));

  const again = await run(server.url, "nightly");
  assert.equal(again.status, 200);
  const two = await again.json();
  assert.equal(two.runs, 2);
  assert.ok(two.fence > one.fence);

  const stored = await status(server.url, "nightly");
  assert.equal(stored.status, 200);
  assert.equal(stored.body.runs, 2);
  assert.equal(stored.body.fence, two.fence);
});

Deno.test("example: a run stalled past its lease has its result refused (409) and the newer run's result stays", async () => {
  const entered = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  let calls = 0;
  const app = createApp({
    redis: redisFromEnv(),
    prefix: uniquePrefix("example-stale"),
    leaseMs: 200,
    // The first run stalls (a paused isolate ignores its lease's signal); later runs are quick.
    work: async () => {
      if (calls++ === 0) {
        entered.resolve();
        await gate.promise;
      }
    },
  });
  await using server = serve(app.fetch);

  const stalled = run(server.url, "nightly");
  let fence: number;
  try {
    await untilInside(entered.promise, stalled);
    await sleep(300); // the stalled run's lease lapses

    const newer = await run(server.url, "nightly");
    assert.equal(newer.status, 200, "the lock is free once the stalled lease lapsed");
    const result = await newer.json();
    assert.equal(result.runs, 1);
    fence = result.fence;
  } finally {
    gate.resolve();
  }
  const late = await stalled;
  assert.equal(late.status, 409);
  assert.equal((await late.json()).highestFence, fence);
  const stored = await status(server.url, "nightly");
  assert.deepEqual({ runs: stored.body.runs, fence: stored.body.fence }, { runs: 1, fence });
});

Deno.test("example: the default work heartbeats, so a run longer than its lease still completes", async () => {
  const leaseMs = 300; // the default work takes 3 x 100 ms: it must heartbeat to finish
  const app = createApp({ redis: redisFromEnv(), prefix: uniquePrefix("example-work"), leaseMs });
  await using server = serve(app.fetch);
  const started = performance.now();
  const res = await run(server.url, "report");
  assert.ok(performance.now() - started > leaseMs, "the run outlived its initial lease");
  assert.equal(res.status, 200, "not 409: the lease was kept alive");
  assert.equal((await res.json()).runs, 1);
});
