// fencelock/worker: a lock per request for a plain Workers fetch handler, without Hono.
export { guardFetch } from "./edge/guard-fetch.ts";
export type { GuardedHandler, GuardFetchOptions, Refusal, WaitUntil } from "./edge/guard-fetch.ts";
