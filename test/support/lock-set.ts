import { createLocks } from "../../src/index.ts";
import { upstash } from "./upstash.ts";

/** Each call is a separate client, as separate isolates or servers would have. */
export function lockSet(prefix: string, leaseMs = 10_000) {
  return createLocks({ redis: upstash(), prefix, leaseMs });
}

/** The lock "gate", taken by a client of its own: the holder a waiter waits for. */
export async function heldLock(prefix: string, leaseMs = 10_000) {
  return lockSet(prefix, leaseMs).acquire("gate");
}
