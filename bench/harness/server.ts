import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Where the clients connect: HTTP clients to url/token, TCP clients to redisUrl. */
export interface Endpoint {
  url: string;
  token: string;
  redisUrl: string;
}

export interface BenchServer extends Endpoint {
  close(): Promise<void>;
}

const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;

/** Starts server-process.ts in a child Node (the same binary) and waits for its address line. */
export async function startServerProcess(): Promise<BenchServer> {
  const entry = fileURLToPath(new URL("./server-process.ts", import.meta.url));
  const child = spawn(process.execPath, [entry], { stdio: ["pipe", "pipe", "inherit"] });
  // SIGTERM, not SIGKILL: the child then stops its own redis-server too (a bench that crashed
  // left one running each time).
  const killOnExit = () => child.kill("SIGTERM");
  process.on("exit", killOnExit);
  try {
    const endpoint = await firstLine(child);
    const close = async () => {
      process.off("exit", killOnExit);
      await stopChild(child);
    };
    return { ...endpoint, close };
  } catch (error) {
    process.off("exit", killOnExit);
    child.kill("SIGKILL");
    throw error;
  }
}

function firstLine(child: ChildProcess): Promise<Endpoint> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error("local server did not start in time")), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`local server exited with code ${code} before it was ready`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      const end = buffer.indexOf("\n");
      if (end < 0) return;
      clearTimeout(timer);
      resolve(JSON.parse(buffer.slice(0, end)) as Endpoint);
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stdin?.end();
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
  child.stdout?.destroy();
}
