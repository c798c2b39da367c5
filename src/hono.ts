// fencelock/hono: Hono middleware. The core (fencelock) never imports hono.
export { lockGuard } from "./lock-guard.ts";
export type { LockGuardOptions, LockVariables } from "./lock-guard.ts";
export { requireFence } from "./require-fence.ts";
export type { FenceVariables, RequireFenceOptions } from "./require-fence.ts";
export type { Refusal } from "./guard.ts";
export type { Problem } from "./problem.ts";
