// Review s14c: fencing over HTTP, against the real store on the local Upstash server.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createFencedStore, createLocks, LockConfigError } from "../../src/index.ts";
import { fencedFetch } from "../../src/http.ts";
import { requireFence } from "../../src/hono.ts";
import { withFetch } from "../support/fetch-wrappers.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

describe("fencedFetch and a Request's own signal", () => {
  // src/fenced-fetch.ts:18 takes `"signal" in init` as "init gives a signal", so init.signal
  // undefined (as from `{ ...options, signal: options.signal }`) drops the Request's own signal.
  // fetch() reads an undefined dictionary member as absent and keeps it; a proxy whose client
  // left then keeps its upstream request open until the lease ends.
  it("with init { signal: undefined } still aborts when the Request's signal aborts, as fetch does", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("ff-signal"), leaseMs: 20_000 });
    const lease = await locks.acquire("invoice-46");
    const hang = (): typeof fetch => (input, init) => new Promise((_, reject) => {
      const { signal } = new Request(input, init);
      signal.addEventListener("abort", () => reject(signal.reason));
    });
    const clientLeft = new AbortController();
    const request = new Request("http://blobs.test/blobs/invoice-46", { method: "PUT", body: "v", signal: clientLeft.signal });
    // What fetch does with the same arguments: the Request's signal stays.
    const control = new AbortController();
    const copy = new Request(new Request("http://x.test/", { signal: control.signal }), { signal: undefined });
    control.abort();
    expect(copy.signal.aborted).toBe(true);

    const outcome = withFetch(hang, () => fencedFetch(lease, request, { signal: undefined }).catch((e: unknown) => e));
    clientLeft.abort(new Error("the client went away"));
    const settled = await Promise.race([outcome, new Promise((resolve) => setTimeout(() => resolve("still open after 1 s"), 1_000))]);
    await lease.release();
    await outcome;
    expect(settled).toMatchObject({ message: "the client went away" });
  });
});

describe("requireFence options", () => {
  // src/require-fence.ts:49 checks that `store` has `write`, but the middleware calls
  // store.claim (claim defaults to true): a store without it passes startup and every request is
  // a 500 TypeError, which the README says the build-time check rules out ("a store of the wrong
  // kind is a LockConfigError at startup rather than a 500 on every request").
  it("refuses at build time a store that cannot claim, when claim is on", async () => {
    const real = createFencedStore({ redis: upstash(), prefix: uniquePrefix("rf-opts") });
    const writeOnly = { write: real.write };
    let built: ReturnType<typeof requireFence> | undefined;
    try {
      built = requireFence({ store: writeOnly as never, resource: () => "x" });
    } catch (error) {
      expect(error).toBeInstanceOf(LockConfigError); // fixed
      return;
    }
    const app = new Hono();
    app.put("/x", built, (c) => c.text("ok"));
    const res = await app.request("/x", { method: "PUT", headers: { "Fencing-Token": "1700000000000001" } });
    expect(res.status).not.toBe(500);
    expect.unreachable("requireFence accepted a store without claim()");
  });
});
