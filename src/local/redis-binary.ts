import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

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
