// Caps on connections and streams, and timeouts for slow senders, seen from real sockets.
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startLocalUpstash, type LocalUpstash } from "../../../src/local/index.ts";
import { key, rest } from "../../support/rest.ts";
import { openRaw, type RawStream } from "./sse-client.ts";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function server(options: Parameters<typeof startLocalUpstash>[0]): Promise<LocalUpstash> {
  const local = await startLocalUpstash(options);
  cleanup.push(() => local.close());
  return local;
}

/** A raw connection to `local`; `closed` resolves with all it received once the server closes it. */
async function rawSocket(local: LocalUpstash): Promise<{ socket: Socket; closed: Promise<string> }> {
  const { hostname, port } = new URL(local.url);
  const socket = connect(Number(port), hostname);
  socket.on("error", () => {});
  cleanup.push(() => socket.destroy());
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
  const closed = once(socket, "close").then(() => received);
  await once(socket, "connect");
  return { socket, closed };
}

const auth = (local: LocalUpstash) => ({ url: local.url, token: local.token });
const ping = (local: LocalUpstash) => `POST / HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${local.token}\r\ncontent-length: 8\r\n\r\n["PING"]`;
const TOO_MANY_STREAMS = /^ERR local server: too many open streams \(2, maxStreams \/ --max-streams\); close some or raise the limit$/;

describe("slow senders", () => {
  // Node's defaults held such a socket about 90 s; margins are wide for a busy machine.
  it("are cut (408) once the configured time for headers or the whole request is up", async () => {
    const local = await server({ headersTimeoutMs: 1_000, requestTimeoutMs: 1_000 });
    const started = performance.now();
    const [silent, slowHeaders, slowBody] = await Promise.all([rawSocket(local), rawSocket(local), rawSocket(local)]);
    slowHeaders.socket.write("POST / HTTP/1.1\r\nhost: x\r\n");
    slowBody.socket.write(ping(local).replace("content-length: 8", "content-length: 100"));
    const received = await Promise.all([silent.closed, slowHeaders.closed, slowBody.closed]);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(received.slice(1).map((text) => text.split("\r\n")[0])).toEqual(["HTTP/1.1 408 Request Timeout", "HTTP/1.1 408 Request Timeout"]);
    expect((await rest("/", { body: ["PING"], ...auth(local) })).json).toEqual({ result: "PONG" });
  });

  it("never include an event stream: requestTimeout covers receiving the request, not a long reply", async () => {
    const local = await server({ headersTimeoutMs: 1_000, requestTimeoutMs: 1_000 });
    const channel = key("long-stream");
    const stream = await openRaw(`/subscribe/${channel}`, auth(local));
    cleanup.push(() => stream.abort());
    expect(await stream.events()).toEqual([`data: subscribe,${channel},1\n\n`]);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await rest("/", { body: ["PUBLISH", channel, "still here"], ...auth(local) });
    expect(await stream.events()).toEqual([`data: message,${channel},still here\n\n`]);
  });
});

describe("maxStreams", () => {
  it("answers 503 with Retry-After past the limit, never a hang, and serves again once one closes", async () => {
    const local = await server({ maxStreams: 2 });
    const open = await Promise.all([0, 1].map(() => openRaw(`/subscribe/${key("capped")}`, auth(local))));
    cleanup.push(() => open.forEach((stream) => stream.abort()));
    const refused = await rest(`/subscribe/${key("one-too-many")}`, { method: "POST", ...auth(local) });
    expect({ status: refused.status, json: refused.json }).toEqual({ status: 503, json: { error: expect.stringMatching(TOO_MANY_STREAMS) } });
    expect(refused.headers.get("retry-after")).toBe("1");
    open[0]?.abort();
    await expect.poll(async () => {
      const next = await openRaw(`/subscribe/${key("after")}`, auth(local));
      cleanup.push(() => next.abort());
      return next.response.status;
    }).toBe(200);
  });

  it("lets exactly maxStreams of many streams opened at once through", async () => {
    const local = await server({ maxStreams: 2 });
    const opened: RawStream[] = await Promise.all(Array.from({ length: 6 }, () => openRaw(`/subscribe/${key("rush")}`, auth(local))));
    cleanup.push(() => opened.forEach((stream) => stream.abort()));
    expect(opened.map((stream) => stream.response.status).sort()).toEqual([200, 200, 503, 503, 503, 503]);
  });
});

describe("maxConnections", () => {
  it("answers 503 on a connection past the limit, closes it, and serves again once one closes", async () => {
    const local = await server({ maxConnections: 2 });
    const held = await Promise.all([rawSocket(local), rawSocket(local)]);
    for (const { socket } of held) {
      socket.write(ping(local)); // answered, then kept alive: both connections stay open
      await once(socket, "data");
    }
    const refused = await rest("/", { body: ["PING"], ...auth(local) });
    expect({ status: refused.status, json: refused.json }).toEqual({
      status: 503,
      json: { error: "ERR local server: too many open connections (2, maxConnections / --max-connections); close some or raise the limit" },
    });
    expect(refused.headers.get("retry-after")).toBe("1");
    held[0]?.socket.destroy();
    await expect.poll(async () => (await rest("/", { body: ["PING"], ...auth(local) })).status).toBe(200);
  });

  it("drops at once, rather than holds, a connection past the limit and the 64 waiting to be refused", async () => {
    const local = await server({ maxConnections: 1 });
    for (let i = 0; i < 65; i++) await rawSocket(local); // one served, 64 to be answered 503
    const started = performance.now();
    const dropped = await rawSocket(local);
    expect(await dropped.closed).toBe("");
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
