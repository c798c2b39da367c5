import type { TestProject } from "vitest/node";
import { startLocalUpstash } from "../../src/local/index.ts";

export interface ProvidedUpstash {
  url: string;
  token: string;
  redisUrl: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    upstash: ProvidedUpstash;
  }
}

/**
 * One local Upstash server with its own redis-server for the whole run; tests read it with
 * `inject("upstash")`. Tests that stop or restart Redis start their own instead.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startLocalUpstash();
  project.provide("upstash", { url: server.url, token: server.token, redisUrl: server.redisUrl });
  return () => server.close();
}
