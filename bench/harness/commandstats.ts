import { Redis as IORedis } from "ioredis";

/** Calls per command name, as Redis counts them (commands run inside Lua scripts included). */
export type CommandCounts = Record<string, number>;

/** A connection of its own for INFO, so reading the stats never counts against a client. */
export class RedisStats {
  readonly #redis: IORedis;

  constructor(redisUrl: string) {
    this.#redis = new IORedis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  }

  /**
   * CPU time Redis' main thread has used, in µs: commands, scripts and the reading and writing
   * of every request. The kernel accounts it to the nanosecond, so deltas over a few hundred
   * cycles are exact enough; Redis' own housekeeping (ten times a second) is in it too.
   */
  async cpuMicros(): Promise<number> {
    const text = await this.#redis.info("cpu");
    const seconds = (field: string) => Number(new RegExp(`^${field}:([\\d.]+)`, "m").exec(text)?.[1] ?? Number.NaN);
    return (seconds("used_cpu_sys_main_thread") + seconds("used_cpu_user_main_thread")) * 1e6;
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
