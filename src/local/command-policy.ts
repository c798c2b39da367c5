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

/** Why the local server refuses this command, or undefined when it may run. */
export function rejectionReason(command: Command): string | undefined {
  const name = command[0].toLowerCase();
  const reason = REJECTED.get(name) ?? subcommandReason(name, command);
  return reason && `ERR '${name}' is not supported by the local Upstash server: ${reason}`;
}

function subcommandReason(name: string, command: Command): string | undefined {
  const args = command.slice(1).map((arg) => arg.toString().toLowerCase());
  if ((name === "xread" || name === "xreadgroup") && args.includes("block")) return REASONS.blocking;
  if (name === "client" && args[0] === "reply") return REASONS.state;
  return undefined;
}

function words(list: string, reason: string): Array<[string, string]> {
  return list.split(" ").map((word) => [word, reason]);
}
