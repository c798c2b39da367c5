// How long a quorum node keeps a lock's last fence.
import { RETRY_WINDOW_MS } from "../redis/run-script.ts";

/**
 * The lease and the retry window, as on one Redis, plus an hour. Clients' clocks propose quorum
 * fences, so a client behind an earlier holder's clock proposes below its fence, and only a node
 * that still knows that fence mints above it. A node forgets it only once its own clock has passed
 * it by more than this, and acquire.lua never mints below that clock less an hour.
 */
export function quorumFenceTtlMs(leaseMs: number): number {
  return leaseMs + RETRY_WINDOW_MS + 3_600_000;
}
