import { inject } from "vitest";

export interface RestResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body; undefined when the body is empty. */
  json: unknown;
}

export interface RestRequest {
  method?: string;
  /** JSON-encoded unless already a string. */
  body?: unknown;
  /** Bearer token; default: the shared server's; null sends no Authorization header. */
  token?: string | null;
  headers?: Record<string, string>;
  /** Server base URL; default: the shared server's. */
  url?: string;
}

/** A raw HTTP request to a local Upstash server, for checking exact status codes and bodies. */
export async function rest(path: string, request: RestRequest = {}): Promise<RestResponse> {
  const shared = inject("upstash");
  const token = request.token === undefined ? shared.token : request.token;
  const headers: Record<string, string> = { ...request.headers };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const body = request.body === undefined || typeof request.body === "string"
    ? request.body
    : JSON.stringify(request.body);
  const response = await fetch(`${request.url ?? shared.url}${path}`, {
    method: request.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

/** A key no other test uses. */
export function key(label: string): string {
  return `local-test:${label}:${crypto.randomUUID()}`;
}
