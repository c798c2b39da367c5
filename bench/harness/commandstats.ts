import { Redis as IORedis } from "ioredis";
import { countedAs, RequestCounter } from "./requests.ts";

/** Calls per command name, as Redis counts them (commands run inside Lua scripts included). */
export type CommandCounts = Record<string, number>;

/** A connection of its own for INFO, so reading the stats never counts against a client. */
export class RedisStats {
  readonly #redis: IORedis;

  constructor(redisUrl: string) {
    this.#redis = new IORedis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  }

  /**
   * Runs `work` and reports the commands Redis ran for it (those scripts called included) and
   * the µs Redis spent executing the commands `work` sent, each at its name's mean execution
   * time (INFO commandstats); a script's time includes the commands it called. The names sent
   * are counted at the transport, so the fetch counter must be installed.
   */
  async timeSent(work: () => Promise<void>): Promise<{ ran: CommandCounts; micros: number }> {
    const sent = new RequestCounter();
    const [callsBefore, microsBefore] = [await this.commands(), await this.#commandMicros()];
    await countedAs(sent, work);
    const ranMicros = commandDelta(microsBefore, await this.#commandMicros());
    const ran = commandDelta(callsBefore, await this.commands());
    const micros = Object.entries(sent.commands)
      .reduce((sum, [name, count]) => sum + (count * (ranMicros[name] ?? 0)) / (ran[name] || 1), 0);
    return { ran, micros };
  }

  async #commandMicros(): Promise<CommandCounts> {
    const text = await this.#redis.info("commandstats");
    const micros: CommandCounts = {};
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
      const [, name = "", usec = "0"] = match;
      micros[name] = Number(usec);
    }
    return micros;
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
