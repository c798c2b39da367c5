import { Redis as IORedis } from "ioredis";

/** Calls per command name, as Redis counts them (commands run inside Lua scripts included). */
export type CommandCounts = Record<string, number>;

/** Names the stats connection, so that SLOWLOG entries of its own calls can be left out. */
const STATS_CLIENT = "bench-stats";

/** A slowlog entry: id, unix time, µs, argv, client address ("?:0" inside Lua), client name. */
type SlowlogEntry = [number, number, number, string[], string, string];

/** A connection of its own for INFO, so reading the stats never counts against a client. */
export class RedisStats {
  readonly #redis: IORedis;

  constructor(redisUrl: string) {
    this.#redis = new IORedis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1, connectionName: STATS_CLIENT });
  }

  /**
   * Microseconds Redis spent executing the commands clients sent while `work` ran, as SLOWLOG
   * times them with its threshold at 0: a script counts with the commands it calls, which are
   * left out on their own (they come from the "?:0" Lua client). Network, parsing and the HTTP
   * server are not in it. Logging every command costs Redis a little, so only untimed runs use it.
   */
  async serverMicros(work: () => Promise<void>): Promise<number> {
    const [, threshold = "10000"] = (await this.#redis.config("GET", "slowlog-log-slower-than")) as string[];
    const [, maxLen = "128"] = (await this.#redis.config("GET", "slowlog-max-len")) as string[];
    await this.#redis.config("SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100000");
    await this.#redis.slowlog("RESET");
    try {
      await work();
      const entries = (await this.#redis.slowlog("GET", -1)) as SlowlogEntry[];
      return entries
        .filter(([, , , , address, name]) => address !== "?:0" && name !== STATS_CLIENT)
        .reduce((sum, [, , micros]) => sum + micros, 0);
    } finally {
      await this.#redis.config("SET", "slowlog-log-slower-than", threshold, "slowlog-max-len", maxLen);
      await this.#redis.slowlog("RESET");
    }
  }

  async commands(): Promise<CommandCounts> {
    const text = await this.#redis.info("commandstats");
    const counts: CommandCounts = {};
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      const [, name = "", calls = "0"] = match;
      counts[name] = Number(calls);
    }
    return counts;
  }

  async version(): Promise<string> {
    const text = await this.#redis.info("server");
    return /^redis_version:(\S+)/m.exec(text)?.[1] ?? "unknown";
  }

  async flush(): Promise<void> {
    await this.#redis.flushall();
  }

  async close(): Promise<void> {
    await this.#redis.quit();
  }
}

/** Commands run between two snapshots, without our own INFO and FLUSHALL calls. */
export function commandDelta(before: CommandCounts, after: CommandCounts): CommandCounts {
  const delta: CommandCounts = {};
  for (const [name, calls] of Object.entries(after)) {
    const ran = calls - (before[name] ?? 0);
    if (ran > 0 && name !== "info" && name !== "flushall") delta[name] = ran;
  }
  return delta;
}

export function totalCommands(counts: CommandCounts): number {
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}
