import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocks, LockTimeoutError, LockUnavailableError } from "../../../src/index.ts";
import { delayingResponses, withFetch } from "../../support/fetch-wrappers.ts";
import { failure, locksAt } from "../../support/failure.ts";
import { startSilentServer, type SilentServer } from "../../support/silent-server.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

/** A Redis endpoint that hangs. */
let silent: SilentServer;
beforeAll(async () => {
  silent = await startSilentServer();
});
afterAll(() => silent.close());

describe("a Redis that is down or slow", () => {
  it("reports a refused connection as LockUnavailableError, not as busy, and fast", async () => {
    const locks = locksAt("http://127.0.0.1:9", "token", { retries: 0 });
    const { error, ms } = await failure(locks.acquire("job", { waitMs: 5_000 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).not.toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: "LOCK_UNAVAILABLE" });
    expect(error.message).toMatch(/check the Redis URL/);
    expect(ms).toBeLessThan(1_000);
  });

  it("does not wait out the client's hidden retries: timeoutMs bounds each request", async () => {
    const locks = locksAt("http://127.0.0.1:9", "token"); // default: 5 retries over ~4 s
    const { error, ms } = await failure(locks.tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(ms).toBeLessThan(2_000);
  });

  it("reports a hanging endpoint after timeoutMs", async () => {
    const { error, ms } = await failure(locksAt(silent.url, "token").tryAcquire("job"));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toMatch(/acquire failed \(no answer within 1000ms, timeoutMs\); check the Redis URL, token and network\./);
    expect(ms).toBeGreaterThanOrEqual(950);
    expect(ms).toBeLessThan(3_000);
  });

  it("gives back a lock taken by an attempt whose reply came after timeoutMs", async () => {
    const prefix = uniquePrefix("late-reply");
    const locks = createLocks({ redis: upstash(), prefix, timeoutMs: 200 });
    await (await locks.tryAcquire("warm"))?.release(); // the script is loaded: one request applies it
    // Redis applies the attempt at once; its reply arrives after the caller gave up on it.
    const { error } = await failure(withFetch(delayingResponses(600, 1), () => locks.tryAcquire("job")));
    expect(error).toBeInstanceOf(LockUnavailableError);
    // Not held for the 10 s lease by a caller that never got it.
    await until(async () => !(await locks.inspect("job")).held, 2_000);
    expect((await locks.tryAcquire("job"))?.fence).toBeGreaterThan(0);
  });
});
