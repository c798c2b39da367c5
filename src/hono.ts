// fencelock/hono: Hono middleware. The core (fencelock) never imports hono.
export { lockGuard } from "./edge/lock-guard.ts";
export type { LockGuardEnv, LockGuardOptions, LockVariables } from "./edge/lock-guard.ts";
export { requireFence } from "./edge/require-fence.ts";
export type { FenceVariables, RequireFenceEnv, RequireFenceOptions } from "./edge/require-fence.ts";
export type { Refusal } from "./edge/guard.ts";
export type { Problem } from "./fencing/http/problem.ts";
