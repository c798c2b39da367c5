import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createFencedStore, createLocks, LockLostError, LockTimeoutError, LockUnavailableError, StaleFenceError, type Lease, type Locks,
} from "../../src/index.ts";
import { sleep } from "../../src/wait.ts";
import { scriptSha1, type RedisClient } from "../../src/redis.ts";
import * as scripts from "../../src/scripts.gen.ts";
import { chaoticFetch, type ChaoticNet } from "../support/chaotic-fetch.ts";
import { until } from "../support/until.ts";
import { uniquePrefix, upstash } from "../support/upstash.ts";

/**
 * Several clients (each its own @upstash/redis client, as separate isolates would be) run random
 * programs against one or two locks over the real local server and real Redis, while every HTTP
 * request and response is delayed at random and some responses are lost after Redis applied the
 * request (so @upstash/redis retries the same body). Leases are short and lapse. After each run
 * the invariants below are checked.
 */
const NAMES = ["a", "b"];
const MAX_LEASE_MS = 800;

type Op =
  | { op: "acquire"; name: number; wake: "poll" | "push"; waitMs: number; leaseMs: number; abortAfterMs: number | null }
  | { op: "try"; name: number; leaseMs: number }
  | { op: "join"; lease: number; waitMs: number; leaseMs: number }
  | { op: "heartbeat"; lease: number }
  | { op: "release"; lease: number; twice: boolean }
  | { op: "resume"; lease: number }
  | { op: "write"; lease: number }
  | { op: "sleep"; ms: number };

interface Net extends ChaoticNet {
  /** The lock set's timeoutMs: short ones give up on slow replies (and give the hold back by ticket). */
  timeoutMs: number;
}

const leaseMs = fc.integer({ min: 300, max: MAX_LEASE_MS });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({
    op: fc.constant("acquire" as const), name: fc.nat(1), wake: fc.constantFrom("poll" as const, "push" as const),
    waitMs: fc.integer({ min: 0, max: 1_200 }), leaseMs,
    abortAfterMs: fc.option(fc.integer({ min: 0, max: 600 }), { freq: 3 }),
  }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("try" as const), name: fc.nat(1), leaseMs }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("join" as const), lease: fc.nat(9), waitMs: fc.integer({ min: 0, max: 300 }), leaseMs }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("heartbeat" as const), lease: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("release" as const), lease: fc.nat(9), twice: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("resume" as const), lease: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("write" as const), lease: fc.nat(9) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("sleep" as const), ms: fc.integer({ min: 0, max: 400 }) }) },
);
const scenario = fc.record({
  programs: fc.array(fc.array(op, { minLength: 3, maxLength: 10 }), { minLength: 2, maxLength: 5 }),
  net: fc.record({ seed: fc.integer(), dropPerMille: fc.integer({ min: 0, max: 150 }), maxDelayMs: fc.integer({ min: 0, max: 120 }),
    timeoutMs: fc.constantFrom(2_000, 2_000, 150, 250) }),
});

/** Where the network logs sends and lost responses, for TRACE=1. */
let netLog: ((line: string) => void) | undefined;

/** An error class a step may meet as part of the game. */
type ErrorClass = abstract new (...args: never[]) => Error;

interface Held {
  client: number;
  lease: Lease;
  name: string;
  /** Replaced by a resume in a new invocation: the old object is no longer used. */
  superseded: boolean;
}

interface Write {
  name: string;
  owner: string;
  fence: number;
  sentAt: number;
  repliedAt: number;
  accepted: boolean;
}

async function runScenario(programs: Op[][], net: Net) {
  const TIMEOUT_MS = net.timeoutMs;
  const prefix = uniquePrefix("core");
  const violations: string[] = [];
  const held: Held[] = [];
  const received: { at: number; owner: string; fence: number; name: string; how: string }[] = [];
  const writes: Write[] = [];
  let operations = 0;
  // One client (isolate) per program; retries quick enough to end well within timeoutMs.
  const trace: string[] = [];
  const t0 = performance.now();
  const now = () => Math.round(performance.now() - t0);
  const shas = new Map<string, string>();
  for (const script of Object.values(scripts)) shas.set(await scriptSha1(script), script.name);
  let callIds = 0;
  netLog = (line) => trace.push(`${now()} ${line}`);
  const client = (label = "?"): RedisClient => {
    const real = upstash({ retry: { retries: 3, backoff: () => 10 } });
    const traced = async <T>(what: string, args: unknown[], call: () => Promise<T>) => {
      const id = ++callIds;
      trace.push(`${now()} ${label} #${id} -> ${what} ${args.map((a) => String(a).slice(0, 12)).join(" ")}`);
      try {
        const reply = await call();
        trace.push(`${now()} ${label} #${id} <- ${JSON.stringify(reply)}`);
        return reply;
      } catch (error) {
        trace.push(`${now()} ${label} #${id} !! ${String(error).slice(0, 60)}`);
        throw error;
      }
    };
    return {
      evalsha: (sha, keys, args) => traced(shas.get(sha) ?? sha, [keys[0], ...args], () => real.evalsha(sha, keys, args)),
      eval: (text, keys, args) => traced("eval", [keys[0], ...args], () => real.eval(text, keys, args)),
      subscribe: (channel) => real.subscribe(channel),
    };
  };
  let locksMade = 0;
  const makeLocks = (c = -1) => createLocks({ redis: client(`c${c}/${locksMade++}`), prefix, leaseMs: 500, timeoutMs: TIMEOUT_MS });

  const sample = (when: string) => {
    for (const name of NAMES) {
      const live = held.filter((h) => h.name === name && !h.superseded && h.lease.remainingMs() > 0);
      const owners = new Set(live.map((h) => h.lease.owner));
      if (owners.size > 1) {
        violations.push(`mutual exclusion (${when}): ${name} valid for ${owners.size} owners, fences ${live.map((h) => `${h.lease.fence}/c${h.client}/${Math.round(h.lease.remainingMs())}ms`).join(", ")}`);
      }
      const fences = new Map<string, number>();
      for (const h of live) {
        const f = fences.get(h.lease.owner);
        if (f !== undefined && f !== h.lease.fence) violations.push(`${name}: one owner valid with two fences ${f} and ${h.lease.fence}`);
        fences.set(h.lease.owner, h.lease.fence);
      }
    }
  };
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

  // 2. Fences across owners rise in the order leases were received, and never repeat for another owner.
  for (const name of NAMES) {
    const list = received.filter((r) => r.name === name).sort((x, y) => x.at - y.at);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const [x, y] = [list[i]!, list[j]!];
        if (x.owner === y.owner) continue;
        if (y.fence <= x.fence) violations.push(`fence order: ${name} ${x.how} fence ${x.fence} then ${y.how} of another owner fence ${y.fence}`);
      }
    }
  }
  // 3. Writes made within their leases are ordered by fence in real time.
  for (const name of NAMES) {
    const list = writes.filter((w) => w.name === name);
    for (const x of list) {
      for (const y of list) {
        if (x.owner !== y.owner && x.repliedAt < y.sentAt && y.fence < x.fence) {
          violations.push(`write order: ${name} fence ${x.fence} written before fence ${y.fence} of another owner`);
        }
      }
    }
  }

  // 4. Liveness: every lease lapses or is released, then the lock is free with nobody in line.
  const observer = createLocks({ redis: upstash(), prefix, timeoutMs: 2_000 });
  for (const name of NAMES) {
    try {
      await until(async () => {
        const state = await observer.inspect(name);
        return !state.held && state.waiters === 0;
      }, MAX_LEASE_MS + 2_500 + 300);
      const fresh = await observer.tryAcquire(name, { leaseMs: 2_000 });
      if (!fresh) violations.push(`liveness: tryAcquire on free ${name} failed; now ${JSON.stringify(await observer.inspect(name))}`);
      else await fresh.release();
    } catch {
      violations.push(`liveness: ${name} still ${JSON.stringify(await observer.inspect(name))}`);
    }
  }
  if (violations.length && process.env.TRACE) console.log(trace.join("\n"));
  return { violations, operations };
}

describe("lock core under random programs, delays, lost responses and lapsing leases", () => {
  it("keeps mutual exclusion, fence order and liveness; every call settles", async () => {
    const totals = { runs: 0, operations: 0, requests: 0, dropped: 0 };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const real = globalThis.fetch;
    const started = performance.now();
    try {
      await fc.assert(
        fc.asyncProperty(scenario, async ({ programs, net }) => {
          globalThis.fetch = chaoticFetch(real, net, totals, (line) => netLog?.(line));
          try {
            const { violations, operations } = await runScenario(programs, net);
            totals.runs++;
            totals.operations += operations;
            if (violations.length) throw new Error(violations.join("\n"));
          } finally {
            globalThis.fetch = real;
          }
        }),
        {
          numRuns: Number(process.env.FC_RUNS ?? 15),
          seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined,
          endOnFailure: process.env.FC_SHRINK ? false : true,
        },
      );
    } finally {
      globalThis.fetch = real;
      process.off("unhandledRejection", onUnhandled);
      console.log(`lock core property: ${totals.runs} runs, ${totals.operations} calls, ${totals.requests} HTTP requests (${totals.dropped} responses lost), ${Math.round(performance.now() - started)} ms`);
    }
    expect(unhandled).toEqual([]);
  }, 170_000);
});
