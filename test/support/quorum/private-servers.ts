// Private redis-servers for one test file's quorum nodes, and connections to them, all closed afterwards.
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { startRedisServer, type RedisServer } from "../../../src/local/index.ts";

/** `count` redis-servers started before the file's tests and stopped after them. */
export function privateServers(count: number) {
  let servers: RedisServer[] = [];
  const connections: Redis[] = [];
  beforeAll(async () => {
    for (let i = 0; i < count; i++) servers.push(await startRedisServer());
  });
  afterAll(async () => {
    connections.forEach((connection) => connection.disconnect());
    await Promise.all(servers.map((server) => server.stop()));
    servers = [];
  });
  return {
    get servers(): readonly RedisServer[] {
      return servers;
    },
    /** A connection of its own to `server`, closed with the servers. */
    connect(server: RedisServer): Redis {
      const connection = new Redis(server.url);
      connections.push(connection);
      return connection;
    },
  };
}
