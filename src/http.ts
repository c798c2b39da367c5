// fencelock/http: carrying fences over HTTP, for services and clients with or without Hono.
export { fencedFetch, STALE_FENCE_PROBLEM } from "./fenced-fetch.ts";
export { FENCE_HEADER, parseFenceHeader } from "./fence.ts";
export type { ParsedFence } from "./fence.ts";
