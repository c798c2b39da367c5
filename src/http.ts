// fencelock/http: carrying fences over HTTP, for services and clients with or without Hono.
export { fencedFetch } from "./fenced-fetch.ts";
export { problemResponse, STALE_FENCE_PROBLEM, staleFenceProblem } from "./problem.ts";
export type { Problem } from "./problem.ts";
export { FENCE_HEADER, parseFenceHeader } from "./fence.ts";
export type { ParsedFence } from "./fence.ts";
