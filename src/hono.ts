// fencelock/hono: Hono middleware. The core (fencelock) never imports hono.
export { lockGuard } from "./lock-guard.ts";
export type { LockGuardEnv, LockGuardOptions, LockVariables } from "./lock-guard.ts";
export { requireFence } from "./require-fence.ts";
export type { FenceVariables, RequireFenceEnv, RequireFenceOptions } from "./require-fence.ts";
export type { Refusal } from "./guard.ts";
export type { Problem } from "./problem.ts";
