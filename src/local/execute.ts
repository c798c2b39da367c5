// Runs commands, pipelines and transactions on Redis for the local server, after its command policy.
import type { Redis } from "ioredis";
import type { Command } from "./command.ts";
import { rejectionReason } from "./command-policy.ts";
import { HttpError } from "./errors.ts";
import type { ConnectionPool } from "./pool.ts";
import { isReplyError } from "./redis-client.ts";
import { unavailable } from "./redis-failure.ts";

/** The outcome of one command: a raw ioredis reply (Buffers), or the error message Redis gave. */
export type Settled = { ok: true; reply: unknown } | { ok: false; error: string };

/**
 * Runs one command on the shared connection, unless the policy refuses it (admin commands
 * unless allowed); throws RedisUnavailableError on connection trouble.
 */
export async function runCommand(redis: Redis, command: Command, allowAdminCommands = false): Promise<Settled> {
  const rejected = rejectionReason(command, allowAdminCommands);
  if (rejected) return { ok: false, error: rejected };
  const [name, ...args] = wireCommand(command);
  try {
    return { ok: true, reply: await redis.callBuffer(name, ...args) };
  } catch (error) {
    if (isReplyError(error)) return { ok: false, error: error.message };
    throw unavailable(error);
  }
}

/** Sends every command at once (ioredis pipelines them in order); one failing does not stop the rest. */
export function runPipeline(redis: Redis, commands: Command[], allowAdminCommands = false): Promise<Settled[]> {
  return Promise.all(commands.map((command) => runCommand(redis, command, allowAdminCommands)));
}

/**
 * MULTI ... EXEC on a connection of its own. A command Redis refuses to queue aborts the whole
 * transaction (HTTP 400, like Upstash's single `{"error"}` for a discarded transaction); a
 * command failing while EXEC runs only fails its own entry.
 */
export async function runTransaction(
  pool: ConnectionPool,
  commands: Command[],
  allowAdminCommands = false,
): Promise<Settled[]> {
  const rejected = commands.map((command) => rejectionReason(command, allowAdminCommands)).find(Boolean);
  if (rejected) throw new HttpError(400, rejected);
  return pool.use(async (connection) => {
    const transaction = connection.multi();
    for (const command of commands) transaction.callBuffer(...wireCommand(command));
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await transaction.exec();
    } catch (error) {
      if (isReplyError(error)) throw new HttpError(400, abortMessage(error));
      throw unavailable(error);
    }
    if (!results) throw new HttpError(400, "EXECABORT Transaction discarded");
    return results.map(([error, reply]): Settled => (error ? { ok: false, error: error.message } : { ok: true, reply }));
  });
}

/**
 * ioredis reshapes some replies, looked up by the exact lowercase name (HGETALL becomes an
 * object); REST clients need Redis' reply untouched, and Redis ignores the name's case.
 */
function wireCommand([name, ...args]: Command): [string, ...Array<string | Buffer>] {
  return [name.toUpperCase(), ...args];
}

/** Redis' EXECABORT says only "because of previous errors"; name the first of them. */
function abortMessage(error: Error): string {
  const previous: unknown = Reflect.get(error, "previousErrors");
  const first: unknown = Array.isArray(previous) ? previous[0] : undefined;
  if (!(first instanceof Error)) return error.message;
  return `${error.message.replace(/\.$/, "")}: ${first.message}`;
}
