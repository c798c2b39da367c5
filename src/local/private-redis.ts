// The redis-server startLocalUpstash starts when given no Redis URL, locked down for its clients.
import { startRedisServer } from "./redis-server.ts";
import { connectRedis } from "./redis-client.ts";

export interface BackingRedis {
  url: string;
  stop?: () => Promise<void>;
  /** The private redis-server's end, saying how. */
  exited?: Promise<string>;
}

/**
 * What command-policy.ts refuses, for Redis itself to refuse too: Lua scripts can call MIGRATE
 * and SWAPDB, which the policy cannot see inside EVAL. The read-only @admin commands come back.
 */
const ADMIN_RULES = ["-@admin", "-migrate", "-swapdb", "+lastsave", "+role", "+pfselftest", "+client|list",
  "+slowlog|get", "+slowlog|len", "+latency|doctor", "+latency|latest", "+latency|graph", "+latency|history",
  "+latency|histogram"];

/**
 * A redis-server on 127.0.0.1 with a random password only the local server and the caller know
 * (other local users cannot reach it), whose one user may not run admin commands unless allowed.
 * DEBUG is enabled with admin commands, MODULE never.
 */
export async function startPrivateRedis(allowAdminCommands: boolean): Promise<BackingRedis> {
  const server = await startRedisServer({ password: randomSecret(), enableDebugCommand: allowAdminCommands });
  if (allowAdminCommands) return server;
  try {
    await refuseAdminCommands(server.url);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

async function refuseAdminCommands(url: string): Promise<void> {
  const admin = await connectRedis(url);
  try {
    await admin.call("ACL", "SETUSER", "default", ...ADMIN_RULES);
  } finally {
    // QUIT, not disconnect(): Redis has dropped the connection once it answers, so no CLIENT LIST shows it.
    await admin.quit().catch(() => admin.disconnect());
  }
}

/** 192 random bits, URL-safe: as a bearer token or a Redis password. */
export function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Buffer.from(bytes).toString("base64url");
}
