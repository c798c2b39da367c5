// Runs an example app against a fresh local Upstash-compatible server, for npm run worker:dev
// and npm run deno:example; Ctrl-C stops the app, then the server.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startLocalUpstash, type LocalUpstash } from "../src/local/index.ts";

export const root = fileURLToPath(new URL("..", import.meta.url));

/** The command to run, given the server; it inherits this process's output and environment. */
export type AppCommand = (server: LocalUpstash) => Promise<{ command: string; args: string[]; env?: Record<string, string> }>;

export async function runWithLocalUpstash(app: AppCommand): Promise<never> {
  // Listened for from the start, SIGHUP too (a closed terminal), and every time (an impatient second
  // Ctrl-C): Node would die of any of them without stopping the server's redis-server, or the app.
  let stopped = false;
  let stopApp: () => unknown = () => undefined;
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => ((stopped = true), stopApp()));
  const server = await startLocalUpstash();
  let code = 0;
  try {
    const { command, args, env } = await app(server);
    // A stop during setup (wrangler's migrations run in app()) starts no app.
    if (!stopped) {
      const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit"] });
      stopApp = () => child.kill("SIGINT");
      // Stopped on request is a clean end, whatever code the app exits with on SIGINT.
      code = await new Promise<number>((resolve) => {
        child.once("exit", (exitCode) => resolve(stopped ? 0 : exitCode ?? 1));
        // Not started at all (say, deno not installed): one line, not a stack.
        child.once("error", (error) => (console.error(`${command}: ${error.message}`), resolve(1)));
      });
    }
  } catch (error) {
    console.error(error);
    code = 1;
  } finally {
    await server.close();
  }
  process.exit(code);
}
