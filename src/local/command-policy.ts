// Which commands the local server refuses to run: those REST cannot serve, and admin commands.
import type { Command } from "./command.ts";

const REASONS = {
  blocking: "blocking commands would stall the shared Redis connection (Upstash REST has none either)",
  subscriber: "pub/sub and MONITOR need a streaming connection: use /subscribe/<channel> or /psubscribe/<pattern>",
  state: "it would change the state of the shared Redis connection",
  transaction: "use the /multi-exec endpoint for transactions (WATCH is not available over REST)",
} as const;

const REJECTED: ReadonlyMap<string, string> = new Map([
  ...words("blpop brpop brpoplpush blmove blmpop bzpopmin bzpopmax bzmpop wait waitaof", REASONS.blocking),
  ...words("subscribe psubscribe ssubscribe unsubscribe punsubscribe sunsubscribe monitor sync psync",
    REASONS.subscriber),
  ...words("select quit reset hello auth replconf", REASONS.state),
  ...words("multi exec discard watch unwatch", REASONS.transaction),
]);

/**
 * Redis' @admin commands (`ACL CAT admin`), MIGRATE and SWAPDB, less their read-only members (ROLE, SLOWLOG GET...):
 * the token must not let anyone open Redis to the network (CONFIG SET bind), stop it, or reach other hosts.
 */
const ADMIN: ReadonlyMap<string, string> = new Map([
  ...words("config", "it reads or changes Redis' configuration (CONFIG SET bind or protected-mode would open Redis to the network)"),
  ...words("acl", "it reads or changes Redis' users and passwords"),
  ...words("debug module pfdebug", "it can crash Redis or run code inside it"),
  ...words("shutdown failover replicaof slaveof", "it stops Redis or changes its replication"),
  ...words("save bgsave bgrewriteaof", "it writes Redis' data to files"),
  ...words("migrate", "it copies keys to a Redis server on any host"),
  ...words("swapdb", "it swaps the database every client sees"),
]);

const ADMIN_SUBCOMMANDS: ReadonlyMap<string, [ReadonlySet<string>, string]> = new Map([
  ["client", [new Set(["kill", "pause", "unpause", "no-evict", "unblock"]),
    "it disconnects, pauses or unblocks other clients, this server's own connections included"]],
  ["cluster", [new Set(["addslots", "addslotsrange", "bumpepoch", "count-failure-reports", "delslots", "delslotsrange",
    "failover", "flushslots", "forget", "meet", "replicas", "replicate", "reset", "saveconfig", "set-config-epoch",
    "setslot", "slaves"]), "it changes the cluster (CLUSTER INFO, NODES, SLOTS, SHARDS, KEYSLOT... are allowed)"]],
  ["latency", [new Set(["reset"]), "it erases Redis' diagnostics"]],
  ["slowlog", [new Set(["reset"]), "it erases Redis' diagnostics"]],
]);

const HOW_TO_ALLOW = "allow admin commands with startLocalUpstash({ allowAdminCommands: true }) or `fencelock dev --allow-admin-commands`";

/** Why the local server refuses this command, or undefined when it may run. */
export function rejectionReason(command: Command, allowAdminCommands = false): string | undefined {
  // Redis' names are ASCII. Another letter could pass the checks below and still reach Redis as a
  // refused command: "ſelect" is sent upper-cased, as SELECT.
  if (!/^[\x21-\x7e]+$/.test(command[0])) return "ERR unknown command: command names are ASCII";
  const name = command[0].toLowerCase();
  const reason = REJECTED.get(name) ?? subcommandReason(name, command);
  if (reason) return `ERR '${name}' is not supported by the local Upstash server: ${reason}`;
  return allowAdminCommands ? undefined : adminReason(name, command);
}

/**
 * Whether XREAD or XREADGROUP would block: BLOCK among its options, which come in any order and end
 * at STREAMS (key names follow). Read as Redis reads them, so a key or group named block is none.
 */
function streamReadBlocks(args: string[]): boolean {
  for (let i = 0; i < args.length && args[i] !== "streams"; i++) {
    if (args[i] === "block") return true;
    i += args[i] === "group" ? 2 : args[i] === "count" ? 1 : 0;
  }
  return false;
}

function subcommandReason(name: string, command: Command): string | undefined {
  const args = command.slice(1).map((arg) => arg.toString().toLowerCase());
  if ((name === "xread" || name === "xreadgroup") && streamReadBlocks(args)) return REASONS.blocking;
  if ((name === "client" && args[0] === "reply") || (name === "script" && args[0] === "debug")) return REASONS.state;
  return undefined;
}

function adminReason(name: string, command: Command): string | undefined {
  const whole = ADMIN.get(name);
  if (whole) return `ERR '${name}' is refused by the local Upstash server: ${whole}; ${HOW_TO_ALLOW}`;
  const [subcommands, reason] = ADMIN_SUBCOMMANDS.get(name) ?? [];
  const subcommand = command[1]?.toString().toLowerCase();
  if (!subcommand || !subcommands?.has(subcommand)) return undefined;
  return `ERR '${name} ${subcommand}' is refused by the local Upstash server: ${reason}; ${HOW_TO_ALLOW}`;
}

function words(list: string, reason: string): Array<[string, string]> {
  return list.split(" ").map((word) => [word, reason]);
}
