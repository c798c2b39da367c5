// The documented defaults and limits a user leans on without setting them (api.md): acquire() waits
// 5 s, a Redis request gets 3 s, and lock names may be 512 characters.
import { Redis } from "@upstash/redis";
import { expect, it } from "vitest";
import { createLocks, LockConfigError, LockUnavailableError } from "../../../src/index.ts";
import { startSilentServer } from "../../support/silent-server.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

it("acquire() waits up to 5 s by default: it gets a lock whose holder's lease ends in 3.5 s", async () => {
  const prefix = uniquePrefix("default-wait");
  await createLocks({ redis: upstash(), prefix, leaseMs: 3_500 }).acquire("job");
  const lease = await createLocks({ redis: upstash(), prefix }).acquire("job");
  expect(lease.fence).toBeGreaterThan(0);
  await lease.release();
});

it("gives up on a Redis that never answers after 3 s by default", async () => {
  const silent = await startSilentServer();
  try {
    const redis = new Redis({ url: silent.url, token: "t", enableTelemetry: false });
    const started = performance.now();
    // Far below a 30 s default, far above 3 s on a busy machine.
    const outcome = await Promise.race([
      createLocks({ redis, prefix: uniquePrefix("default-timeout") }).tryAcquire("job").catch((e: unknown) => e),
      new Promise((resolve) => setTimeout(() => resolve("no answer after 20 s"), 20_000)),
    ]);
    expect(outcome).toBeInstanceOf(LockUnavailableError);
    // 3 s, not 2 or 10: a loaded machine may run the timer late, not early.
    expect(performance.now() - started).toBeGreaterThan(2_500);
    expect(performance.now() - started).toBeLessThan(8_000);
  } finally {
    await silent.close();
  }
}, 30_000);

it("takes a lock whose name is exactly 512 characters, and refuses 513", async () => {
  const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("name-512") });
  const lease = await locks.tryAcquire("n".repeat(512));
  expect(lease?.name).toHaveLength(512);
  await lease?.release();
  await expect(locks.tryAcquire("n".repeat(513))).rejects.toBeInstanceOf(LockConfigError);
});
