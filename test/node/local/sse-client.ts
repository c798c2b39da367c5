import { inject } from "vitest";

export interface RawStream {
  response: Response;
  /** The next `n` events (blocks ending in a blank line), exactly as sent. */
  events(n?: number): Promise<string[]>;
  /** Resolves once the body is over: "done" when the server ended it, "cut" when the connection broke. */
  ended(): Promise<"done" | "cut">;
  abort(): void;
}

export interface StreamRequest {
  url?: string;
  token?: string;
  method?: string;
  headers?: Record<string, string>;
}

/** A raw fetch of an event-stream path, as @upstash/redis sends it, for checking the exact bytes. */
export async function openRaw(path: string, request: StreamRequest = {}): Promise<RawStream> {
  const shared = inject("upstash");
  const controller = new AbortController();
  const response = await fetch(`${request.url ?? shared.url}${path}`, {
    method: request.method ?? "POST",
    headers: {
      authorization: `Bearer ${request.token ?? shared.token}`,
      accept: "text/event-stream",
      "upstash-encoding": "base64",
      ...request.headers,
    },
    body: request.method === "GET" ? undefined : "[]",
    signal: controller.signal,
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const events = async (n = 1) => {
    const found: string[] = [];
    while (found.length < n) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        found.push(buffer.slice(0, end + 2));
        buffer = buffer.slice(end + 2);
        continue;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended after ${JSON.stringify(found)}; left: ${JSON.stringify(buffer)}`);
      buffer += value;
    }
    return found;
  };
  const ended = async () => {
    try {
      while (!(await reader.read()).done);
      return "done" as const;
    } catch {
      return "cut" as const;
    }
  };
  return { response, events, ended, abort: () => controller.abort() };
}

/** Starts a stream request and aborts it after `ms`: mostly while the server is still setting it up. */
export async function abortAfter(ms: number, path: string, request: StreamRequest = {}): Promise<void> {
  const shared = inject("upstash");
  const controller = new AbortController();
  const response = fetch(`${request.url ?? shared.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${request.token ?? shared.token}` },
    body: "[]",
    signal: controller.signal,
  }).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, ms));
  controller.abort();
  await response;
}
