import { connect, createServer, type Server, type Socket } from "node:net";
import type { RedisProcess } from "./redis-process.ts";

/**
 * A fixed Redis address in front of whichever redis-server is primary, as a Sentinel-managed or
 * Upstash endpoint is: a failover switches the target and drops every open connection, so the
 * local server's client reconnects to the new primary. With no target, connections are refused.
 */
export class SwitchingProxy {
  readonly #server: Server;
  readonly #open = new Set<Socket>();
  #target: RedisProcess | null;

  private constructor(server: Server, target: RedisProcess) {
    this.#server = server;
    this.#target = target;
    server.on("connection", (client) => this.#forward(client));
  }

  static async start(target: RedisProcess): Promise<SwitchingProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    return new SwitchingProxy(server, target);
  }

  get url(): string {
    const address = this.#server.address();
    if (!address || typeof address === "string") throw new Error("proxy is not listening");
    return `redis://127.0.0.1:${address.port}`;
  }

  /** The redis-server now behind the address, or null while none is. */
  get target(): RedisProcess | null {
    return this.#target;
  }

  /** Points the address at `target` (null: at nothing), cutting every connection made before. */
  switchTo(target: RedisProcess | null): void {
    this.#target = target;
    for (const socket of this.#open) socket.destroy();
    this.#open.clear();
  }

  async close(): Promise<void> {
    this.switchTo(null);
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #forward(client: Socket): void {
    client.on("error", () => {});
    if (!this.#target) {
      client.destroy();
      return;
    }
    const upstream = connect(this.#target.port, "127.0.0.1");
    upstream.on("error", () => {});
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      this.#open.add(from);
      from.pipe(to);
      from.on("close", () => {
        this.#open.delete(from);
        to.destroy();
      });
    }
  }
}
