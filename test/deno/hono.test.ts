// lockGuard (src/hono.ts) in a Hono app served by Deno.serve, with real HTTP between client and app.
import assert from "node:assert/strict";
import { Hono } from "hono";
import { createLocks } from "../../src/index.ts";
import { lockGuard, type LockVariables } from "../../src/hono.ts";
import { redisFromEnv, serve, uniquePrefix, untilInside } from "./support.ts";

const LEASE_MS = 5_000;

/** An app whose order 42 handler waits for `gate` once it holds the lock, so a test can overlap requests. */
function ordersApp() {
  const locks = createLocks({ redis: redisFromEnv(), prefix: uniquePrefix("hono"), leaseMs: LEASE_MS });
  const entered = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  const app = new Hono<{ Variables: LockVariables }>();
  app.post("/orders/:id/pay", lockGuard({ locks, name: (c) => `order:${c.req.param("id")}` }), async (c) => {
    const lease = c.get("lease");
    if (c.req.query("fail")) throw new Error("card declined");
    if (c.req.param("id") === "42") {
      entered.resolve();
      await gate.promise;
    }
    return c.json({ order: c.req.param("id"), fence: lease.fence });
  });
  app.onError((error, c) => c.json({ error: error.message }, 500));
  return { app, locks, entered, gate };
}

const pay = (base: string, id: string, query = "") => fetch(`${base}/orders/${id}/pay${query}`, { method: "POST" });

Deno.test("lockGuard over Deno.serve: one request gets in, a concurrent one gets 423 with Retry-After", async () => {
  const { app, locks, entered, gate } = ordersApp();
  await using server = serve(app.fetch);

  const first = pay(server.url, "42");
  try {
    await untilInside(entered.promise, first); // the first request holds order:42 now

    const second = await pay(server.url, "42");
    assert.equal(second.status, 423);
    assert.equal(second.headers.get("Content-Type"), "application/problem+json");
    const retryAfter = Number(second.headers.get("Retry-After"));
    // From the holder's remaining TTL, in whole seconds.
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= LEASE_MS / 1000 - 1 && retryAfter <= LEASE_MS / 1000, `Retry-After ${retryAfter}`);
    const problem = await second.json();
    assert.equal(problem.status, 423);
    assert.equal(problem.retryAfter, retryAfter);
    assert.ok(!JSON.stringify(problem).match(/[0-9a-f]{32}/), "no owner token in the refusal");

    const otherOrder = await pay(server.url, "43");
    assert.equal(otherOrder.status, 200, "another order is not blocked");
    await otherOrder.body?.cancel();
  } finally {
    gate.resolve(); // never leave the first request (and the server's shutdown) hanging
  }
  const done = await first;
  assert.equal(done.status, 200);
  const { fence } = await done.json();
  assert.ok(Number.isSafeInteger(fence) && fence > 0);

  // Released after the handler: the next request gets in at once, with a higher fence.
  assert.equal((await locks.inspect("order:42")).held, false);
  const next = await pay(server.url, "42");
  assert.equal(next.status, 200);
  assert.ok((await next.json()).fence > fence);
});

Deno.test("lockGuard releases the lock when the handler throws", async () => {
  const { app, locks } = ordersApp();
  await using server = serve(app.fetch);
  const failed = await pay(server.url, "7", "?fail=1");
  assert.equal(failed.status, 500);
  assert.deepEqual(await failed.json(), { error: "card declined" });
  assert.equal((await locks.inspect("order:7")).held, false);
  const retried = await pay(server.url, "7");
  assert.equal(retried.status, 200);
  await retried.body?.cancel();
});
