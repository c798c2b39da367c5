import { createServer, type ServerResponse } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createHandler } from "../../../src/local/handler.ts";
import { EventStream } from "../../../src/local/sse.ts";
import { key, rest } from "../../support/rest.ts";
import { handlerBackend } from "./backend.ts";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** How many Redis connections are subscribed to `channel`. */
async function listening(channel: string): Promise<number> {
  const { json } = await rest("/", { body: ["PUBSUB", "NUMSUB", channel] });
  return (json as { result: [string, number] }).result[1];
}

describe("an event stream whose reader stops reading", () => {
  it("is dropped once 32 MB behind: its connection closes, not only its Redis subscription", async () => {
    const { backend, close } = await handlerBackend();
    const server = createServer(createHandler(backend));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanup.push(close, () => new Promise((r) => { server.close(r); server.closeAllConnections(); }));
    const connections = () => new Promise<number>((resolve) => server.getConnections((_, n) => resolve(n)));

    const channel = key("slow");
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    socket.on("error", () => {});
    cleanup.push(() => socket.destroy());
    socket.write(`POST /subscribe/${channel} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Length: 2\r\n\r\n[]`);
    await new Promise((resolve) => socket.once("data", resolve));
    socket.pause(); // reads nothing more
    expect(await connections()).toBe(1);
    expect(await listening(channel)).toBe(1);
    const megabyte = "x".repeat(1024 * 1024);
    for (let i = 0; i < 48; i++) await rest("/", { body: ["PUBLISH", channel, megabyte] });
    await expect.poll(() => listening(channel), { timeout: 3_000 }).toBe(0); // the Redis side is dropped
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await connections()).toBe(0); // and the HTTP connection, with the 32 MB queued on it
  });
});

describe("an event stream whose held-back events pass 32 MB before open()", () => {
  // Events published while a many-name subscription is still being confirmed are held back; they
  // once had no limit (one request held 412 messages of 8 MB, +3.6 GB, for 53 s).
  it("ends at once, like an open stream that far behind, and open() then writes nothing and starts no timer", async () => {
    let response: ServerResponse | undefined;
    const server = createServer((_request, res) => void (response = res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    socket.on("error", () => {});
    cleanup.push(() => socket.destroy(), () => new Promise((r) => { server.close(r); server.closeAllConnections(); }));
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await vi.waitUntil(() => response, { timeout: 2_000 });
    const setIntervalSpy = vi.spyOn(globalThis, "setInterval");
    cleanup.push(() => setIntervalSpy.mockRestore());
    let ends = 0;
    const stream = new EventStream(response as ServerResponse, () => ends++);
    const megabyte = `data: ${"x".repeat(1024 * 1024)}\n\n`;
    for (let i = 0; i < 31; i++) stream.send(megabyte); // published before the confirmation was written
    expect(stream.ended).toBe(false);
    for (let i = 0; i < 17; i++) stream.send(megabyte);
    expect({ ended: stream.ended, ends }).toEqual({ ended: true, ends: 1 });
    stream.open({}, ["data: subscribe,ch,1\n\n"], 20);
    expect({ headersSent: response?.headersSent, keepAlives: setIntervalSpy.mock.calls.length }).toEqual({ headersSent: false, keepAlives: 0 });
  });
});
