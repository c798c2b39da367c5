// A client built without a URL or token (Redis.fromEnv() with the variables unset) fails on its
// first call, at once and by name, where it used to wait out timeoutMs and blame the network.
import { Redis } from "@upstash/redis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createFencedStore, createLocks, LockConfigError } from "../../../src/index.ts";

const message = "Invalid Redis client: it has no URL or token. Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN " +
  "(what Redis.fromEnv() reads), or pass new Redis({ url, token })";

describe("an unconfigured @upstash/redis client", () => {
  vi.spyOn(console, "warn").mockImplementation(() => undefined); // the client warns as it is built
  afterAll(() => void vi.unstubAllEnvs());
  const unconfigured = () => {
    vi.stubEnv("UPSTASH_REDIS_REST_URL", undefined);
    vi.stubEnv("UPSTASH_REDIS_REST_TOKEN", undefined);
    return Redis.fromEnv({ enableTelemetry: false });
  };

  it("fails a lock's first call with LockConfigError naming the variables", async () => {
    // A long timeoutMs: before, the call waited it out and said "check the Redis URL, token and network".
    const locks = createLocks({ redis: unconfigured(), timeoutMs: 60_000 });
    const error = await locks.tryAcquire("job").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigError);
    expect((error as Error).message).toBe(message);
  });

  it("fails the same way with a URL but no token", async () => {
    const locks = createLocks({ redis: new Redis({ url: "http://127.0.0.1:1", token: "" }), timeoutMs: 60_000 });
    await expect(locks.inspect("job")).rejects.toThrow(message);
  });

  it("fails a fenced store's first call the same way", async () => {
    const store = createFencedStore({ redis: new Redis({ url: "", token: "" }), timeoutMs: 60_000 });
    await expect(store.read("doc")).rejects.toThrow(message);
  });
});
