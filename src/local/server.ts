import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface HttpListener {
  url: string;
  port: number;
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** How long close() waits for requests already running before it cuts their connections. */
const DRAIN_MS = 5_000;

/** Serves `handler` on host:port (port 0: a free one) until close(). */
export function listen(handler: Handler, host: string, port: number): Promise<HttpListener> {
  const running = new Set<ServerResponse>();
  const server = createServer({ keepAliveTimeout: 5_000 }, (request, response) => {
    running.add(response);
    response.once("close", () => running.delete(response));
    if (!server.listening) response.setHeader("connection", "close");
    handler(request, response);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      resolve({ url: `http://${urlHost(host)}:${bound}`, port: bound, close: () => drain(server, running) });
    });
  });
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
