// The quorum bench's nodes: each a redis-server of its own behind a local Upstash-compatible server
// of its own, in a child process of its own (server-process.ts), as the rest of the bench runs its one.
import { commandDelta, RedisStats, type CommandCounts } from "./commandstats.ts";
import { startServerProcess, type BenchServer } from "./server.ts";

/** Starts `count` nodes side by side; stops those that started if one fails. */
export async function startNodes(count: number): Promise<BenchServer[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => startServerProcess()));
  const nodes = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = started.find((s) => s.status === "rejected");
  if (failed) {
    await Promise.allSettled(nodes.map((n) => n.close()));
    throw failed.reason;
  }
  return nodes;
}

/** INFO commandstats of several nodes, each over a connection of its own. */
export class NodesStats {
  readonly nodes: RedisStats[];

  constructor(redisUrls: readonly string[]) {
    this.nodes = redisUrls.map((url) => new RedisStats(url));
  }

  /** Each node's command counts, in node order. */
  perNode(): Promise<CommandCounts[]> {
    return Promise.all(this.nodes.map((n) => n.commands()));
  }

  /** Command counts summed over the nodes (what runContention reads). */
  async commands(): Promise<CommandCounts> {
    const sum: CommandCounts = {};
    for (const counts of await this.perNode()) {
      for (const [name, n] of Object.entries(counts)) sum[name] = (sum[name] ?? 0) + n;
    }
    return sum;
  }

  /** Runs work and reports what each node ran for it (our INFO and FLUSHALL calls left out). */
  async during(work: () => Promise<void>): Promise<CommandCounts[]> {
    const before = await this.perNode();
    await work();
    const after = await this.perNode();
    return after.map((counts, i) => commandDelta(before[i] ?? {}, counts));
  }

  flush(): Promise<void> {
    return Promise.all(this.nodes.map((n) => n.flush())).then(() => undefined);
  }

  version(): Promise<string> {
    return this.nodes[0]?.version() ?? Promise.resolve("unknown");
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.close()));
  }
}
