// Reading requests and writing JSON replies for the local server: body limit, path segments, auth.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "./errors.ts";

/**
 * Upstash's request size limit (Free and pay-as-you-go plans), which bounds replies too: reading a value grown past it
 * (APPEND) is refused ("ERR max request size exceeded"; upstash.com/docs/redis/troubleshooting/max_request_size_exceeded).
 */
const MAX_BODY_BYTES = 10 * 1024 * 1024;

export function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size <= MAX_BODY_BYTES) return;
      // Discard the rest rather than destroy the socket, so the client still reads the 413.
      request.off("data", collect).resume();
      reject(new HttpError(413, `ERR max request size exceeded (over ${MAX_BODY_BYTES} bytes)`));
    };
    request.on("data", collect);
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

/** One percent-encoded URL path segment, decoded (fetch encodes spaces, braces, non-ASCII...). */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `ERR malformed URL segment ${segment}`);
  }
}

/**
 * One path segment as the bytes it percent-encodes, which need not be UTF-8 (`%FF%00`). The
 * rest of a request target is ASCII: Node refuses a request line with other bytes.
 */
export function segmentBytes(segment: string): Buffer {
  if (/%(?![\da-f]{2})/i.test(segment)) throw new HttpError(400, `ERR malformed URL segment ${segment}`);
  const latin1 = segment.replace(/%([\da-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(latin1, "latin1");
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new HttpError(400, `ERR failed to parse the request body as JSON: ${(error as Error).message}`);
  }
}

/** `Authorization: Bearer <token>`, or `?_token=` as Upstash also accepts; compared in constant time. */
export function isAuthorized(request: IncomingMessage, query: URLSearchParams, token: string): boolean {
  const header = request.headers.authorization ?? "";
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const given = match?.[1] ?? query.get("_token");
  if (!given) return false;
  return timingSafeEqual(digest(given), digest(token));
}

/** Sends `body` as JSON; `syncToken` is left out only for a connection refused before the handler saw it. */
export function sendJson(response: ServerResponse, status: number, body: unknown, syncToken?: string): void {
  let text = JSON.stringify(body);
  const size = Buffer.byteLength(text);
  if (size > MAX_BODY_BYTES) {
    // Upstash does not document the status; 400 is what it gives a command that failed.
    [status, text] = [400, JSON.stringify({ error: `ERR max request size exceeded. Limit: ${MAX_BODY_BYTES} bytes, Actual: ${size} bytes` })];
  }
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...(syncToken === undefined ? {} : { "upstash-sync-token": syncToken }),
    ...(status === 413 ? { connection: "close" } : {}),
    // Every 503 is passing (Redis reconnecting, too many streams or connections): say when to retry.
    ...(status === 503 ? { "retry-after": "1" } : {}),
  });
  response.end(response.req.method === "HEAD" ? undefined : text);
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
