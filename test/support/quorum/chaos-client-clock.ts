// Clients whose clocks run ahead: quorum mode proposes each fence from the caller's clock
// (Date.now()), so a client far ahead pushes every node's last fence up, and the clients after it
// get their fences from the nodes' last + 1 alone: the majority, not the clock, keeps them in order.
import { AsyncLocalStorage } from "node:async_hooks";

const context = new AsyncLocalStorage<{ aheadMs: number }>();
const realNow = Date.now;
let installed = 0;

/**
 * Date.now() reads `aheadMs` ahead inside `withClientClock(aheadMs, fn)` (and whatever it starts),
 * true time elsewhere; until the returned function is called. Only Date.now(): performance.now(),
 * which leases measure their validity by, is untouched.
 */
export function installClientClocks(): () => void {
  if (installed++ === 0) Date.now = () => realNow() + (context.getStore()?.aheadMs ?? 0);
  return () => {
    if (--installed === 0) Date.now = realNow;
  };
}

/** Runs `fn` as a client whose wall clock reads `aheadMs` ahead of true time. */
export function withClientClock<T>(aheadMs: number, fn: () => T): T {
  return aheadMs ? context.run({ aheadMs }, fn) : fn();
}
