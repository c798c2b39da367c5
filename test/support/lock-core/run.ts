// One run of the lock core property test: every client's program at once, with mutual exclusion
// sampled as they go and the after-run checks once they end.
import {
  createFencedStore, createLocks, LockLostError, LockTimeoutError, LockUnavailableError, StaleFenceError, type Lease, type Locks,
} from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { uniquePrefix } from "../upstash.ts";
import {
  fenceOrderViolations, livenessViolations, mutualExclusionViolations, writeOrderViolations, type Held, type Received, type Write,
} from "./invariants.ts";
import { NAMES, type Net, type Op } from "./program.ts";
import { tracedClients } from "./traced-client.ts";

/** Where the network logs sends and lost responses, for TRACE=1. */
export let netLog: ((line: string) => void) | undefined;

/** An error class a step may meet as part of the game. */
type ErrorClass = abstract new (...args: never[]) => Error;

export async function runScenario(programs: Op[][], net: Net) {
  const TIMEOUT_MS = net.timeoutMs;
  const prefix = uniquePrefix("core");
  const violations: string[] = [];
  const held: Held[] = [];
  const received: Received[] = [];
  const writes: Write[] = [];
  let operations = 0;
  const trace: string[] = [];
  const t0 = performance.now();
  const now = () => Math.round(performance.now() - t0);
  // One client (isolate) per program.
  const client = await tracedClients(trace, now);
  netLog = (line) => trace.push(`${now()} ${line}`);
  let locksMade = 0;
  const makeLocks = (c = -1) => createLocks({ redis: client(`c${c}/${locksMade++}`), prefix, leaseMs: 500, timeoutMs: TIMEOUT_MS });

  const sample = (when: string) => void violations.push(...mutualExclusionViolations(held, when));
  const sampler = setInterval(() => sample("timer"), 3);

  /** Runs one call, flagging it if it has not settled by its bound. */
  const bounded = async <T>(what: string, boundMs: number, call: () => Promise<T>): Promise<T> => {
    operations++;
    const started = performance.now();
    const timer = setTimeout(() => violations.push(`hang: ${what} unsettled after ${boundMs} ms`), boundMs);
    try {
      return await call();
    } finally {
      clearTimeout(timer);
      const took = performance.now() - started;
      if (took > boundMs) violations.push(`slow: ${what} took ${Math.round(took)} ms (bound ${boundMs})`);
    }
  };
  const bound = (waitMs: number) => waitMs + 3 * TIMEOUT_MS + 1_000;

  const receive = (c: number, lease: Lease, how: string) => {
    const at = performance.now();
    if (lease.remainingMs() <= 0) return; // arrived lapsed: nothing to check it against
    held.push({ client: c, lease, name: lease.name, superseded: false });
    trace.push(`${now()} c${c} received ${how} ${lease.name} fence ${lease.fence} owner ${lease.owner.slice(0, 12)} ${Math.round(lease.remainingMs())} ms left`);
    received.push({ at, owner: lease.owner, fence: lease.fence, name: lease.name, how });
    sample(`after ${how}`);
  };
  const unexpected = (what: string, error: unknown) =>
    // A short timeoutMs gives up on slow replies: that is LockUnavailableError, by design.
    (error instanceof LockUnavailableError && TIMEOUT_MS < 1_000) ||
    // So does an acquire whose last reply, delayed or retried, took most of a short leaseMs.
    (error instanceof LockUnavailableError && error.message.startsWith("Redis took most of leaseMs")) ||
    violations.push(`${what} threw unexpectedly: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);

  const runProgram = async (c: number, program: Op[]) => {
    let locks: Locks = makeLocks(c);
    const store = createFencedStore({ redis: client(`c${c}/store`), prefix, timeoutMs: TIMEOUT_MS });
    const mine = () => held.filter((h) => h.client === c && !h.superseded);
    const pick = (i: number) => {
      const list = mine();
      return list.length ? list[i % list.length] : undefined;
    };
    /** Runs `op` on one of this client's leases, if it holds any; an `expected` error is part of the game. */
    const onHeld = async (i: number, what: string, expected: ErrorClass | null, op: (h: Held) => Promise<void>) => {
      const h = pick(i);
      if (!h) return;
      try {
        await op(h);
      } catch (error) {
        if (!(expected && error instanceof expected)) unexpected(what, error);
      }
    };
    for (const step of program) {
      sample(`before ${step.op}`);
      switch (step.op) {
        case "acquire": {
          const controller = step.abortAfterMs === null ? undefined : new AbortController();
          const timer = controller && setTimeout(() => controller.abort(), step.abortAfterMs!);
          try {
            const lease = await bounded("acquire", bound(step.waitMs), () =>
              locks.acquire(NAMES[step.name]!, { wake: step.wake, waitMs: step.waitMs, leaseMs: step.leaseMs, signal: controller?.signal }));
            receive(c, lease, `acquire ${step.wake}`);
          } catch (error) {
            const aborted = controller?.signal.aborted && error instanceof Error && error.name === "AbortError";
            if (!(error instanceof LockTimeoutError) && !aborted) unexpected("acquire", error);
          } finally {
            clearTimeout(timer);
          }
          break;
        }
        case "try": {
          try {
            const lease = await bounded("tryAcquire", bound(0), () => locks.tryAcquire(NAMES[step.name]!, { leaseMs: step.leaseMs }));
            if (lease) receive(c, lease, "tryAcquire");
          } catch (error) {
            unexpected("tryAcquire", error);
          }
          break;
        }
        case "join":
          await onHeld(step.lease, "join", LockTimeoutError, async (h) => {
            const validBefore = h.lease.remainingMs() > 0;
            const lease = await bounded("join", bound(step.waitMs), () =>
              locks.acquire(h.name, { owner: h.lease.owner, waitMs: step.waitMs, leaseMs: step.leaseMs }));
            // A join while the lease is still valid is the same lease: same fence.
            if (validBefore && h.lease.remainingMs() > 0 && lease.fence !== h.lease.fence) {
              violations.push(`join of a valid lease got fence ${lease.fence}, lease has ${h.lease.fence}`);
            }
            receive(c, lease, "join");
          });
          break;
        case "heartbeat":
          await onHeld(step.lease, "heartbeat", LockLostError, async (h) => {
            await bounded("heartbeat", bound(0), () => h.lease.heartbeat());
            sample("after heartbeat");
          });
          break;
        case "release":
          await onHeld(step.lease, "release", null, async (h) => {
            const first = await bounded("release", bound(0), () => h.lease.release());
            if (step.twice) {
              const second = await bounded("release again", bound(0), () => h.lease.release());
              if (second !== first) violations.push(`release twice: ${first} then ${second}`);
            }
            if (h.lease.remainingMs() !== 0) violations.push("a released lease still has time left");
          });
          break;
        case "resume":
          await onHeld(step.lease, "resumed heartbeat", LockLostError, async (h) => {
            // A new invocation: a fresh client and lock set; the old lease object is dropped.
            h.superseded = true;
            locks = makeLocks(c);
            const resumed = locks.resume({ name: h.name, owner: h.lease.owner, fence: h.lease.fence });
            held.push({ client: c, lease: resumed, name: h.name, superseded: false });
            await bounded("resumed heartbeat", bound(0), () => resumed.heartbeat());
            received.push({ at: performance.now(), owner: resumed.owner, fence: resumed.fence, name: h.name, how: "resume" });
            sample("after resume");
          });
          break;
        case "write": {
          const h = pick(step.lease);
          if (!h || h.lease.remainingMs() <= 0) break;
          const sentAt = performance.now();
          let accepted: boolean | undefined = true;
          try {
            await bounded("write", bound(0), () => store.write(h.name, { client: c, fence: h.lease.fence }, h.lease.fence));
          } catch (error) {
            accepted = error instanceof StaleFenceError ? false : undefined;
            if (!(error instanceof StaleFenceError)) unexpected("write", error);
          }
          // Only writes whose lease stayed valid from send to reply are the lease's to make.
          if (h.lease.remainingMs() > 0) {
            if (accepted) writes.push({ name: h.name, owner: h.lease.owner, fence: h.lease.fence, sentAt, repliedAt: performance.now(), accepted });
            if (accepted === false) violations.push(`stale: a write under a lease valid throughout (fence ${h.lease.fence}) was refused`);
          }
          break;
        }
        case "sleep":
          await sleep(step.ms);
          break;
      }
      sample(`after ${step.op}`);
    }
  };

  await Promise.all(programs.map((program, c) => runProgram(c, program)));
  clearInterval(sampler);
  sample("end");

  violations.push(...fenceOrderViolations(received));
  violations.push(...writeOrderViolations(writes));
  violations.push(...await livenessViolations(prefix));
  if (violations.length && process.env.TRACE) console.log(trace.join("\n"));
  return { violations, operations };
}
