// Requests counted at the transport, per simulated client: every fetch() that @upstash/redis
// makes (it calls the global fetch at request time), and every command ioredis writes to
// its socket. The client a request belongs to is the async context it was made in.
import { AsyncLocalStorage } from "node:async_hooks";
import { Redis as IORedis } from "ioredis";

export class RequestCounter {
  /** HTTP requests (including SSE subscriptions) or TCP commands sent. */
  requests = 0;
  /** Of those, SSE subscription streams opened. */
  streams = 0;
  /** The Redis commands those requests carried, by lowercase name (not those scripts ran). */
  commands: Record<string, number> = {};
}

const scope = new AsyncLocalStorage<RequestCounter>();

/** Every request made anywhere in this process, whatever its client. */
export const allRequests = new RequestCounter();

/** Runs fn with every request it makes (directly or later, in its async context) counted to counter. */
export function countedAs<T>(counter: RequestCounter, fn: () => T): T {
  return scope.run(counter, fn);
}

function record(stream: boolean, commands: string[]): void {
  for (const counter of [allRequests, scope.getStore()]) {
    if (!counter) continue;
    counter.requests += 1;
    if (stream) counter.streams += 1;
    for (const name of commands) counter.commands[name] = (counter.commands[name] ?? 0) + 1;
  }
}

/** The command names in an Upstash REST body: one command, or a list of them (/pipeline). */
function commandsIn(body: unknown): string[] {
  let parsed: unknown;
  try {
    parsed = typeof body === "string" ? JSON.parse(body) : undefined;
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const list: unknown[] = Array.isArray(parsed[0]) ? parsed : [parsed];
  return list.flatMap((command) => (Array.isArray(command) ? [String(command[0]).toLowerCase()] : []));
}

/** Wraps globalThis.fetch; returns the function that restores it. */
export function installFetchCounter(): () => void {
  const original = globalThis.fetch;
  const counting: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    record(/\/p?subscribe\//.test(new URL(url).pathname), commandsIn(init?.body));
    return original(input, init);
  };
  globalThis.fetch = counting;
  return () => {
    globalThis.fetch = original;
  };
}

/** A TCP client for the peers over ioredis: connected, with every command it sends counted. */
export async function countedConnection(redisUrl: string): Promise<IORedis> {
  const client = countCommands(new IORedis(redisUrl, { lazyConnect: true }));
  await client.connect();
  return client;
}

/** Counts the commands this ioredis connection sends (one per round trip; no pipelining is used). */
function countCommands(client: IORedis): IORedis {
  const send = client.sendCommand.bind(client);
  client.sendCommand = (...args: Parameters<typeof send>) => {
    record(false, [args[0].name.toLowerCase()]);
    return send(...args);
  };
  return client;
}
