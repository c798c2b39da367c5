// The local server's request handler: the Upstash REST protocol, request by request.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import { parseCommand, parseCommandList, type Command } from "./command.ts";
import { allowBrowsers, answerPreflight } from "./cors.ts";
import { HttpError, RedisUnavailableError } from "./errors.ts";
import { runCommand, runPipeline, runTransaction, type Settled } from "./execute.ts";
import { decodeSegment, isAuthorized, parseJson, readBody, segmentBytes, sendJson } from "./http-io.ts";
import type { ConnectionPool } from "./pool.ts";
import { toJsonReply } from "./reply.ts";
import { parseTarget, type RequestTarget } from "./request-target.ts";
import { streamSubscription, subscriptionOf, type StreamBackend } from "./subscription.ts";

export interface Backend extends StreamBackend {
  redis: Redis;
  pool: ConnectionPool;
  token: string;
  /** Run CONFIG, DEBUG, SHUTDOWN and the other admin commands too (default false). */
  allowAdminCommands?: boolean;
}

interface Reply {
  status: number;
  body: unknown;
}

const ALLOWED_METHODS = new Set(["GET", "HEAD", "POST", "PUT"]);
const MONITOR_PATH = /^\/monitor(\/|$)/i;

/**
 * The Upstash REST protocol on top of one shared connection, plus pooled connections for
 * transactions and subscription streams.
 */
export function createHandler(backend: Backend): (request: IncomingMessage, response: ServerResponse) => void {
  // Opaque and increasing like Upstash's; one Redis without replicas always reads its own writes.
  let counter = 0;
  return (request, response) => {
    allowBrowsers(response);
    if (request.method === "OPTIONS") return answerPreflight(request, response);
    const syncToken = String(++counter);
    respond(request, response, backend, syncToken)
      .catch(errorReply)
      .then((reply) => reply && otherReadsFirst().then(() => sendJson(response, reply.status, reply.body, syncToken)))
      .catch(() => response.destroy());
  };
}

/**
 * Resolves after the other sockets readable with this reply's Redis answer are handled, so that a release's
 * handover (published on a subscriber connection) reaches its waiter before the releaser's reply goes out.
 */
const otherReadsFirst = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The JSON reply, or undefined when the request became an event stream that answered itself. */
async function respond(
  request: IncomingMessage,
  response: ServerResponse,
  backend: Backend,
  syncToken: string,
): Promise<Reply | undefined> {
  const method = request.method ?? "GET";
  if (!ALLOWED_METHODS.has(method)) throw new HttpError(405, `ERR method ${method} is not allowed`);
  const target = parseTarget(request.url ?? "/");
  if (!isAuthorized(request, target.query, backend.token)) {
    throw new HttpError(401, "WRONGPASS missing or invalid auth token (send Authorization: Bearer <token>)");
  }
  const base64 = String(request.headers["upstash-encoding"]).toLowerCase() === "base64";
  const { path } = target;
  if (MONITOR_PATH.test(path)) {
    throw new HttpError(404, `ERR ${path} (server-sent events) is not served by the local Upstash server`);
  }
  const subscription = subscriptionOf(path);
  if (subscription) {
    if (method !== "GET" && method !== "POST") throw new HttpError(405, `ERR ${path} needs POST (or GET)`);
    request.resume(); // @upstash/redis sends "[]" as the body; the path says everything
    await streamSubscription(response, backend, subscription, { "upstash-sync-token": syncToken });
    return undefined;
  }
  if (path === "/pipeline" || path === "/multi-exec") {
    if (method !== "POST" && method !== "PUT") throw new HttpError(405, `ERR ${path} needs POST`);
    const commands = parseCommandList(parseJson(await readBody(request)));
    const settled = path === "/pipeline"
      ? await runPipeline(backend.redis, commands, backend.allowAdminCommands)
      : await runTransaction(backend.pool, commands, backend.allowAdminCommands);
    return { status: 200, body: settled.map((entry) => toEntry(entry, base64)) };
  }
  const command = await commandOf(request, target);
  const entry = toEntry(await runCommand(backend.redis, command, backend.allowAdminCommands), base64);
  return { status: "error" in entry ? 400 : 200, body: entry };
}

/** `POST /` carries a JSON command; any other path is the command itself: `/set/key/value?EX=100`. */
async function commandOf(request: IncomingMessage, { path, query }: RequestTarget): Promise<Command> {
  const hasBody = request.method === "POST" || request.method === "PUT";
  const body = hasBody ? await readBody(request) : Buffer.alloc(0);
  if (path === "/") {
    if (!hasBody) throw new HttpError(400, "ERR no command: POST a JSON array such as [\"GET\", \"key\"]");
    return parseCommand(parseJson(body));
  }
  // Arguments are the bytes sent, UTF-8 or not, as Upstash's "JSON or Binary Value" form stores them.
  const [commandName = "", ...segments] = path.slice(1).split("/");
  const args: Array<string | Buffer> = [decodeSegment(commandName), ...segments.map(segmentBytes)];
  if (body.length > 0) args.push(body);
  for (const [name, value] of query) {
    if (name !== "_token") args.push(name, value);
  }
  return parseCommand(args);
}

function toEntry(settled: Settled, base64: boolean): { result: unknown } | { error: string } {
  return settled.ok ? { result: toJsonReply(settled.reply, base64) } : { error: settled.error };
}

function errorReply(error: unknown): Reply {
  if (error instanceof HttpError) return { status: error.status, body: { error: error.message } };
  if (error instanceof RedisUnavailableError) return { status: 503, body: { error: `ERR ${error.message}` } };
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: { error: `ERR internal error in the local Upstash server: ${message}` } };
}
