// A TCP proxy in front of a Redis that can silence its subscriber connections (they stay open but
// pass nothing either way, as when a NAT or load balancer forgets a connection without a word), or
// hold back what Redis sends on them, as a slow or distant node would.
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { startRedisServer, type RedisServer } from "../../src/local/index.ts";

interface Link {
  subscriber: boolean;
  silent: boolean;
  readonly sockets: Socket[];
}

export class SilencingProxy {
  readonly #server: Server;
  readonly #links = new Set<Link>();
  /** How long Redis' replies on subscriber connections are held back. */
  subscriberDelayMs = 0;

  private constructor(server: Server, targetPort: number) {
    this.#server = server;
    server.on("connection", (client) => this.#forward(client, connect(targetPort, "127.0.0.1")));
  }

  static async start(targetPort: number): Promise<SilencingProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new SilencingProxy(server, targetPort);
  }

  get url(): string {
    const address = this.#server.address();
    if (!address || typeof address === "string") throw new Error("proxy is not listening");
    return `redis://127.0.0.1:${address.port}`;
  }

  /** Silences every connection that has subscribed so far; later ones pass as before. */
  silenceSubscribers(): number {
    const subscribers = [...this.#links].filter((link) => link.subscriber);
    subscribers.forEach((link) => (link.silent = true));
    return subscribers.length;
  }

  async close(): Promise<void> {
    this.#links.forEach((link) => link.sockets.forEach((socket) => socket.destroy()));
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #forward(client: Socket, server: Socket): void {
    const link: Link = { subscriber: false, silent: false, sockets: [client, server] };
    this.#links.add(link);
    client.on("data", (data: Buffer) => {
      // A SUBSCRIBE command, not a key or value that spells the word.
      if (/^\*\d+\r\n\$\d+\r\n[sp]?subscribe\r\n/im.test(data.toString("latin1"))) link.subscriber = true;
      if (!link.silent) server.write(data);
    });
    server.on("data", (data: Buffer) => {
      if (link.silent) return;
      if (link.subscriber && this.subscriberDelayMs) setTimeout(() => client.write(data), this.subscriberDelayMs);
      else client.write(data);
    });
    for (const [from, to] of [[client, server], [server, client]] as const) {
      from.on("error", () => to.destroy());
      from.on("close", () => (to.destroy(), this.#links.delete(link)));
    }
  }
}

/** A private redis-server behind a proxy, for one test file: started before its tests, stopped after. */
export function serverBehindProxy(): { server: RedisServer; proxy: SilencingProxy } {
  const rig = {} as { server: RedisServer; proxy: SilencingProxy };
  beforeAll(async () => {
    rig.server = await startRedisServer();
    rig.proxy = await SilencingProxy.start(Number(new URL(rig.server.url).port));
  });
  afterAll(async () => {
    await rig.proxy?.close();
    await rig.server?.stop();
  });
  return rig;
}
