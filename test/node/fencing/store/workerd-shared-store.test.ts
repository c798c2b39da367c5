// A fenced store kept at module scope in a Worker serves every request of its isolate, also while
// another request's first call is still checking the prefix: on Workers a request cannot wait on
// I/O that another request started, and that request may be cancelled.
import { afterEach, describe, expect, inject, it } from "vitest";
import { startWorker, type StartedWorker } from "../../../../scripts/worker-runtime.ts";
import { uniquePrefix } from "../../../support/upstash.ts";

let worker: StartedWorker | undefined;
afterEach(async () => void (await worker?.dispose()));

describe("a fenced store shared by a Worker's requests", () => {
  it("serves a request whose first write overlaps another request's, abandoned, first write", async () => {
    const { url, token } = inject("upstash");
    worker = await startWorker(new URL("../../../workers/store/worker.ts", import.meta.url), {
      bindings: { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, PREFIX: uniquePrefix("workerd-store") },
    });
    const fence = Date.now() * 1_000;
    // Before, the second request waited on the first one's check, which the runtime had cancelled: for ever.
    const never = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 30 s")), 30_000).unref());
    const [left, written] = await Promise.race([never, Promise.all([
      worker.fetch(`/abandon?fence=${fence}`),
      worker.fetch(`/write?fence=${fence + 1}`),
    ])]);
    expect(await left.text()).toBe("left");
    expect([written.status, await written.json()]).toEqual([200, { value: "written", fence: fence + 1 }]);
  });
});
