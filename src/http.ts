// fencelock/http: carrying fences over HTTP, for services and clients with or without Hono.
export { fencedFetch } from "./fencing/http/fenced-fetch.ts";
export { problemResponse, STALE_FENCE_PROBLEM, staleFenceProblem } from "./fencing/http/problem.ts";
export type { Problem } from "./fencing/http/problem.ts";
export { FENCE_HEADER, parseFenceHeader } from "./core/fence.ts";
export type { ParsedFence } from "./core/fence.ts";
