// What the quorum bench's libraries record for the checks after the run: every acquire's fence
// and script calls, and every error they rode out.
import type { ScriptCalls } from "../harness/script-calls.ts";

/** Errors kept word for word for the report; the rest are only counted. */
const KEPT_ERRORS = 5;

/** One acquire() call of a fencelock client, as the bench saw it. */
export interface AcquireRecord {
  name: string;
  fence: number;
  /** performance.now() when acquire() resolved. */
  at: number;
  /** acquire.lua requests sent inside the call (N per attempt in quorum mode). */
  acquireCalls: number;
  /** adopt.lua requests sent before the call resolved: the write-back round. */
  adoptBefore: number;
  /** Every script call of this acquire, late ones included (a node that granted after the vote). */
  calls: ScriptCalls;
}

/** What went wrong over the whole run: nothing, when the library behaves. */
export interface Anomalies {
  /** Acquire attempts that failed with an error (LockUnavailableError...) and were retried. */
  errors: number;
  firstErrors: string[];
  /** release() calls that found the lease gone (fencelock "expired") or failed. */
  failedReleases: number;
  /** Fenced libraries: acquires whose fence was not above the previous holder's of that name. */
  fenceRegressions: number;
  firstRegressions: string[];
  /** Fenced libraries: acquires whose fences were checked. */
  fencesChecked: number;
}

export type Recorder = ReturnType<typeof recorder>;

export function recorder() {
  let acquires: AcquireRecord[] = [];
  const anomalies: Anomalies = { errors: 0, firstErrors: [], failedReleases: 0, fenceRegressions: 0, firstRegressions: [], fencesChecked: 0 };
  // Acquires of one name resolve in the order the lock passed between holders (each holder's is
  // recorded before it releases), so each fence must be above the one recorded before it.
  const lastFence = new Map<string, number>();
  return {
    anomalies: () => anomalies,
    error(error: unknown) {
      anomalies.errors += 1;
      if (anomalies.firstErrors.length < KEPT_ERRORS) anomalies.firstErrors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    },
    failedRelease() {
      anomalies.failedReleases += 1;
    },
    acquired(record: AcquireRecord) {
      acquires.push(record);
      anomalies.fencesChecked += 1;
      const last = lastFence.get(record.name);
      if (last !== undefined && record.fence <= last) {
        anomalies.fenceRegressions += 1;
        if (anomalies.firstRegressions.length < KEPT_ERRORS) anomalies.firstRegressions.push(`"${record.name}": ${record.fence} after ${last}`);
      }
      lastFence.set(record.name, record.fence);
    },
    take(): AcquireRecord[] {
      const taken = acquires;
      acquires = [];
      return taken;
    },
  };
}
