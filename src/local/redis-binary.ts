// Finding the redis-server binary, and which major version it is.
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";

/** Where redis-server comes from: the explicit path, else REDIS_SERVER_BIN, else the first on PATH. */
export function findRedisServerBinary(explicit?: string): string | undefined {
  const given = explicit ?? process.env.REDIS_SERVER_BIN;
  if (given) return isExecutable(given) ? given : undefined;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "redis-server");
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Human-readable description of where findRedisServerBinary looked, for error messages. */
export function describeSearch(explicit?: string): string {
  if (explicit) return `binary option: ${explicit}`;
  if (process.env.REDIS_SERVER_BIN) return `REDIS_SERVER_BIN=${process.env.REDIS_SERVER_BIN}`;
  return "searched PATH";
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `redis-server --version` says "Redis server v=7.0.15 sha=..."; 0 when it says something else. */
export async function majorVersion(binary: string): Promise<number> {
  try {
    const { stdout } = await promisify(execFile)(binary, ["--version"], { timeout: 5_000 });
    return Number(/\bv=(\d+)\./.exec(stdout)?.[1] ?? 0);
  } catch {
    return 0; // launching it will say what is wrong
  }
}
