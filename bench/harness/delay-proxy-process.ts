// Child process: a TCP proxy on loopback that adds a round trip to every request, apart from the
// bench's busy event loop so that its timers fire on time. Argv: target port, RTT in ms. Over IPC
// it says { type: "ready" }, then answers { id, type: "listen" } with a new port to connect to and
// { id, type: "count", port } with the connections accepted on that port so far.
import { createServer, connect, type Socket } from "node:net";

const [targetPort, rttMs] = process.argv.slice(2).map(Number);
if (!targetPort || rttMs === undefined || !(rttMs >= 0)) throw new Error("usage: delay-proxy-process.ts <target port> <rtt ms>");
const oneWayMs = rttMs / 2;
/** A new connection is usable this long after it is accepted: what TCP + TLS 1.3 handshakes cost. */
const handshakeMs = 2 * rttMs;
/**
 * Timers here fire on whole milliseconds, so a chunk leaves up to this much before it is due
 * rather than waiting for the next tick: without it each direction ran about 1 ms late.
 */
const EARLY_MS = 0.5;

/**
 * Bytes of one direction, each written `oneWayMs` after it arrived (but not before the
 * connection is open), in order. One timer per direction, for the earliest chunk only, so that
 * chunks due in the same millisecond can never overtake each other.
 */
class DelayedPipe {
  readonly #queue: Array<{ due: number; chunk: Buffer | null }> = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #to: Socket;
  readonly #openAt: number;

  constructor(to: Socket, openAt: number) {
    this.#to = to;
    this.#openAt = openAt;
  }

  /** A chunk, or null for the end of the stream (the other side's FIN, passed on in turn). */
  push(chunk: Buffer | null): void {
    this.#queue.push({ due: Math.max(performance.now(), this.#openAt) + oneWayMs, chunk });
    this.#drain();
  }

  #drain(): void {
    const now = performance.now();
    let head = this.#queue[0];
    while (head && head.due - now < EARLY_MS) {
      this.#queue.shift();
      if (head.chunk === null) this.#to.end();
      else this.#to.write(head.chunk);
      head = this.#queue[0];
    }
    if (head && this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#drain();
      }, head.due - now);
    }
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#queue.length = 0;
  }
}

/** Connections accepted, by listening port. */
const accepted = new Map<number, number>();

function relay(client: Socket, port: number): void {
  accepted.set(port, (accepted.get(port) ?? 0) + 1);
  const openAt = performance.now() + handshakeMs;
  const upstream = connect({ host: "127.0.0.1", port: targetPort as number, allowHalfOpen: true });
  const toUpstream = new DelayedPipe(upstream, openAt);
  const toClient = new DelayedPipe(client, openAt);
  for (const socket of [client, upstream]) socket.setNoDelay(true);
  client.on("data", (chunk: Buffer) => toUpstream.push(chunk));
  client.on("end", () => toUpstream.push(null));
  upstream.on("data", (chunk: Buffer) => toClient.push(chunk));
  upstream.on("end", () => toClient.push(null));
  // A reset or an error on either side ends both at once, as a broken connection would.
  const teardown = () => {
    toUpstream.dispose();
    toClient.dispose();
    client.destroy();
    upstream.destroy();
  };
  client.on("error", teardown);
  upstream.on("error", teardown);
  client.on("close", (hadError) => hadError && teardown());
  upstream.on("close", (hadError) => hadError && teardown());
}

/** A new listening port: a new origin, so the bench's clients get a connection pool of their own for it. */
function listen(): Promise<number> {
  return new Promise((resolve, reject) => {
    let port = 0;
    const server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => relay(socket, port));
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      port = typeof address === "object" && address ? address.port : 0;
      accepted.set(port, 0);
      resolve(port);
    });
  });
}

type Request = { id: number; type: "listen" } | { id: number; type: "count"; port: number };

process.on("message", (request: Request) => {
  if (request.type === "count") process.send?.({ id: request.id, value: accepted.get(request.port) ?? 0 });
  if (request.type === "listen") {
    listen().then((port) => process.send?.({ id: request.id, value: port }), (error: unknown) => process.send?.({ id: request.id, error: String(error) }));
  }
});
// The parent gone, nothing is left to serve.
process.on("disconnect", () => process.exit(0));
process.send?.({ type: "ready" });
