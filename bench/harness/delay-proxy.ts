// A delay proxy in front of the local server (delay-proxy-process.ts, in a child process of its
// own): each direction's bytes pass RTT/2 later, a new connection's first bytes 2 × RTT later still.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Endpoint } from "./server.ts";

/** One port of the proxy: an origin of its own, so its clients share no connection with another route's. */
export interface Route {
  /** The server's endpoint with its HTTP url pointing at this port (TCP clients are not proxied). */
  endpoint: Endpoint;
  /** Connections accepted on this port so far. */
  connections(): Promise<number>;
}

export interface DelayProxy {
  rttMs: number;
  route(): Promise<Route>;
  close(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;
const ANSWER_TIMEOUT_MS = 5_000;

type Reply = { type: "ready" } | { id: number; value: number } | { id: number; error: string };

/** Starts a proxy to `endpoint`'s HTTP port that charges `rttMs` per round trip. */
export async function startDelayProxy(endpoint: Endpoint, rttMs: number): Promise<DelayProxy> {
  const target = new URL(endpoint.url);
  const entry = fileURLToPath(new URL("./delay-proxy-process.ts", import.meta.url));
  // execArgv empty: the bench's --expose-gc and the like are not the proxy's business.
  const child = fork(entry, [target.port, String(rttMs)], { execPath: process.execPath, execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const killOnExit = () => child.kill("SIGKILL");
  process.on("exit", killOnExit);
  try {
    await ready(child);
    const ask = asker(child);
    const route = async (): Promise<Route> => {
      const port = await ask({ type: "listen" });
      const url = new URL(endpoint.url);
      url.port = String(port);
      return { endpoint: { ...endpoint, url: url.origin }, connections: () => ask({ type: "count", port }) };
    };
    const close = async () => {
      process.off("exit", killOnExit);
      await stop(child);
    };
    return { rttMs, route, close };
  } catch (error) {
    process.off("exit", killOnExit);
    child.kill("SIGKILL");
    throw error;
  }
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("delay proxy did not start in time")), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`delay proxy exited with code ${code} before it was ready`)));
    child.on("message", (reply: Reply) => {
      if (!("type" in reply)) return;
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Sends requests to the child; each carries an id, so answers never mix up. */
function asker(child: ChildProcess): (request: { type: "listen" } | { type: "count"; port: number }) => Promise<number> {
  let next = 0;
  const waiting = new Map<number, (reply: Reply) => void>();
  child.on("message", (reply: Reply) => {
    if (!("id" in reply)) return;
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  return (request) => new Promise((resolve, reject) => {
    const id = next++;
    const timer = setTimeout(() => reject(new Error(`delay proxy did not answer "${request.type}"`)), ANSWER_TIMEOUT_MS);
    waiting.set(id, (reply) => {
      clearTimeout(timer);
      if ("value" in reply) resolve(reply.value);
      else reject(new Error(`delay proxy: ${"error" in reply ? reply.error : "no answer"}`));
    });
    child.send({ ...request, id });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // Closing the IPC channel ends the child (it exits on disconnect); SIGKILL only if it hangs.
  child.disconnect();
  const timer = setTimeout(() => child.kill("SIGKILL"), ANSWER_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
