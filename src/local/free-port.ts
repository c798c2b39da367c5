// A free TCP port, for servers that need one before they start.
import { createServer } from "node:net";

/** Asks the OS for a currently free TCP port on `host`. */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error("no port assigned"))));
    });
  });
}
