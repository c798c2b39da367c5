// An HTTP server that accepts requests and never answers: a Redis endpoint or a downstream that hangs.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface SilentServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startSilentServer(): Promise<SilentServer> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
