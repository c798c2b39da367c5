import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface HttpListener {
  url: string;
  port: number;
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** Serves `handler` on host:port (port 0: a free one) until close(). */
export function listen(handler: Handler, host: string, port: number): Promise<HttpListener> {
  const server = createServer({ keepAliveTimeout: 5_000 }, handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      const close = () =>
        new Promise<void>((done) => {
          server.close(() => done());
          // close() alone waits for idle keep-alive sockets (e.g. fetch's pool) to time out.
          server.closeAllConnections();
        });
      resolve({ url: `http://${urlHost(host)}:${bound}`, port: bound, close });
    });
  });
}

function urlHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}
