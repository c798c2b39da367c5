// CORS for the local server, so @upstash/redis works from a browser page too.
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Lets web pages on any origin call the server, as Upstash does for @upstash/redis in a browser.
 * Any origin is safe to allow: requests carry the bearer token themselves, never cookies.
 */
export function allowBrowsers(response: ServerResponse): void {
  response.setHeader("access-control-allow-origin", "*");
  // The client reads it for read-your-writes; a browser hides response headers not listed here.
  response.setHeader("access-control-expose-headers", "upstash-sync-token");
}

/** Answers the preflight a browser sends before a request with an Authorization header. */
export function answerPreflight(request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(204, {
    "access-control-allow-methods": "GET, HEAD, POST, PUT",
    // Whatever the client sends (authorization, upstash-encoding, upstash-sync-token, ...).
    "access-control-allow-headers": request.headers["access-control-request-headers"] ?? "authorization",
    "access-control-max-age": "86400",
  });
  response.end();
}
