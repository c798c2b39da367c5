import { Redis, type RedisConfigNodejs } from "@upstash/redis";
import { inject } from "vitest";

type ClientOptions = Omit<RedisConfigNodejs, "url" | "token">;

/** The real @upstash/redis client against a local server (default: the run's shared one). */
export function localRedis(options: ClientOptions = {}, server?: { url: string; token: string }): Redis {
  const { url, token } = server ?? inject("upstash");
  return new Redis({ url, token, enableTelemetry: false, ...options });
}
