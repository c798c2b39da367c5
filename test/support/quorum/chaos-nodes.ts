// The quorum chaos test's nodes: three local Upstash-compatible servers, each with a private
// redis-server, started once for every seed (each seed uses a prefix of its own).
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";

export class ChaosNodes {
  readonly servers: LocalUpstash[];
  /** Straight to each node's redis-server, for the nemesis. */
  readonly admin: IORedis[];

  private constructor(servers: LocalUpstash[]) {
    this.servers = servers;
    this.admin = servers.map((server) => {
      const redis = new IORedis(server.redisUrl, { maxRetriesPerRequest: 1 });
      redis.on("error", () => {});
      return redis;
    });
  }

  static async start(count: number): Promise<ChaosNodes> {
    const servers: LocalUpstash[] = [];
    try {
      for (let i = 0; i < count; i++) servers.push(await startLocalUpstash());
    } catch (error) {
      await Promise.all(servers.map((server) => server.close()));
      throw error;
    }
    return new ChaosNodes(servers);
  }

  get urls(): string[] {
    return this.servers.map((server) => server.url);
  }

  /** One client per node, as an isolate would make: quick retries, so the faults decide how long a run takes. */
  clients(retry: { retries: number; backoff: () => number } = { retries: 3, backoff: () => 10 }): Redis[] {
    return this.servers.map(({ url, token }) => new Redis({ url, token, enableTelemetry: false, retry }));
  }

  async close(): Promise<void> {
    for (const redis of this.admin) redis.disconnect();
    await Promise.all(this.servers.map((server) => server.close()));
  }
}
