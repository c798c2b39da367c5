import { Redis, type RedisConfigNodejs } from "@upstash/redis";
import { inject } from "vitest";

/** A fresh @upstash/redis client for the run's shared local server, as an isolate would have. */
export function upstash(overrides: Partial<RedisConfigNodejs> = {}): Redis {
  const { url, token } = inject("upstash");
  return new Redis({ url, token, enableTelemetry: false, ...overrides });
}

/** A unique lock-name prefix per test, so tests never see each other's keys. */
export function uniquePrefix(label: string): string {
  return `t-${label}-${crypto.randomUUID().slice(0, 8)}`;
}
