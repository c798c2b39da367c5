import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";

/**
 * An upstream that compresses, as most do: its Content-Length is that of the gzip on the wire,
 * and fetch() hands on the decoded body, several times longer.
 */
export async function gzipUpstream(): Promise<{ url: string; text: string; close(): void }> {
  const text = Array.from({ length: 200_000 }, (_, i) => `line ${i}\n`).join("");
  const gzipped = gzipSync(text);
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip", "content-length": String(gzipped.length) });
    response.end(gzipped);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    text,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
