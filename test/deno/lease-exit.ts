// Run by test/node/edge/deno-lease-exit.test.ts (not a test file of the Deno suite): a lease whose
// signal was read, then released, must let a Deno script end.
import { createLocks } from "../../src/index.ts";
import { redisFromEnv, uniquePrefix } from "./support.ts";

const locks = createLocks({ redis: redisFromEnv(), prefix: uniquePrefix("exit"), leaseMs: 60_000 });
await locks.withLock("job", (lease) => void lease.signal.aborted);
console.log("released");
