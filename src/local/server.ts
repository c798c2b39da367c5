// The local server's HTTP listener: caps on connections, timeouts for slow senders, graceful close.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { sendJson } from "./http-io.ts";
import { LIMIT_DEFAULTS } from "./options.ts";

interface HttpListener {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface ListenOptions {
  host: string;
  /** 0: a free one. */
  port: number;
  maxConnections?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** How long close() waits for requests already running before it cuts their connections. */
const DRAIN_MS = 5_000;

/**
 * Connections past maxConnections that are still answered (503 at their first request) rather
 * than dropped unanswered by Node; each holds a socket until it speaks or its headers time out.
 */
const REFUSAL_SLOTS = 64;

/** Serves `handler` on host:port until close(). */
export function listen(handler: Handler, {
  host,
  port,
  maxConnections = LIMIT_DEFAULTS.maxConnections,
  headersTimeoutMs = LIMIT_DEFAULTS.headersTimeoutMs,
  requestTimeoutMs = LIMIT_DEFAULTS.requestTimeoutMs,
}: ListenOptions): Promise<HttpListener> {
  const running = new Set<ServerResponse>();
  const server = createServer({
    keepAliveTimeout: 5_000,
    headersTimeout: headersTimeoutMs,
    // Applies until the request is received: a long event stream is a long response, never cut.
    requestTimeout: requestTimeoutMs,
    // Node looks for timed-out requests only this often (30 s by default).
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs / 4),
  }, (request, response) => {
    running.add(response);
    response.once("close", () => running.delete(response));
    const refused = overCap.has(request.socket);
    if (refused || !server.listening) response.setHeader("connection", "close");
    if (refused) return refuseConnection(response, maxConnections);
    handler(request, response);
  });
  const overCap = admitConnections(server, maxConnections);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      resolve({ url: `http://${urlHost(host)}:${bound}`, port: bound, close: () => drain(server, running) });
    });
  });
}

/** Counts open connections; those that find `max` open already are returned, to be refused. */
function admitConnections(server: Server, max: number): WeakSet<Socket> {
  const overCap = new WeakSet<Socket>();
  let open = 0;
  server.maxConnections = max + REFUSAL_SLOTS;
  server.on("connection", (socket: Socket) => {
    if (open >= max) {
      overCap.add(socket);
      return;
    }
    open++;
    socket.once("close", () => open--);
  });
  return overCap;
}

function refuseConnection(response: ServerResponse, max: number): void {
  const error = `ERR local server: too many open connections (${max}, maxConnections / --max-connections); close some or raise the limit`;
  sendJson(response, 503, { error });
}

/**
 * Stops accepting connections and closes idle keep-alive ones (fetch's pool) at once, but lets
 * requests already running answer for up to DRAIN_MS: cutting one leaves its client unsure
 * whether its write happened. Their answers close their connections, which would otherwise
 * idle on until the keep-alive timeout.
 */
function drain(server: Server, running: ReadonlySet<ServerResponse>): Promise<void> {
  for (const response of running) if (!response.headersSent) response.setHeader("connection", "close");
  return new Promise((done) => {
    const cut = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    server.close(() => {
      clearTimeout(cut);
      done();
    });
  });
}

function urlHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}
