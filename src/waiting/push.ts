// The two ways to wait between attempts: polling with backoff, or push wake-ups on the lock set's stream.
import type { Busy } from "../core/backend.ts";
import { MIN_RETRY_MS, QUEUE_ALIVE_MS, retryDelayMs, sleep } from "./backoff.ts";
import type { Member, WakeChannel } from "./wake-channel.ts";

/** How acquire() spends the time between two attempts on a busy lock. */
export interface Waiter {
  /** Resolves with a fence when a release handed the lock to this waiter while it slept. */
  pause(tries: number, busy: Busy, budgetMs: number, signal?: AbortSignal): Promise<number | void>;
  /** Told that an attempt took the lock (not a handover's message); absent when that tells nothing. */
  granted?(): void;
  /** Absent when there is nothing to close. */
  close?(): void;
}

/** Server-hinted, jittered backoff: `wake: "poll"`, and where push is unavailable. */
export const pollWaiter: Waiter = {
  pause: (tries, busy, budgetMs, signal) => sleep(retryDelayMs(tries, busy, budgetMs), signal),
};

/**
 * Push wake-ups: the release takes the lock for the first waiter in line and publishes the fence
 * to that waiter alone, which saves it a request. Registered before the first attempt, so that while
 * the lock set's stream is live every handover after an attempt reaches the waiter; when it was not
 * live (opening, or lost since), the waiter attempts again once it is, and polls until then.
 * Without a message a waiter looks 50 ms after the TTL, and at least every second to keep its place
 * (every half leaseMs, for a shorter lease).
 */
export function pushWaiter(channel: WakeChannel, ticket: string, owner: string, leaseMs: number): Required<Waiter> {
  const member = channel.join(ticket, owner);
  // The last pause listened all along on a stream live since the attempt before it, and heard nothing.
  let heardNothing = false;
  return {
    async pause(tries, busy, budgetMs, signal) {
      // Within half its leaseMs too: a handover whose message was lost holds the lock that long.
      const refreshMs = Math.min(QUEUE_ALIVE_MS / 2, leaseMs / 2);
      // 50 ms past the TTL, as retryDelayMs. Promised to an earlier waiter (0): until a message or
      // the refresh. This call's hold came too late (-1): no message will come, so in 49 ms.
      const waitMs = Math.min(busy.busyForMs ? busy.busyForMs + MIN_RETRY_MS : refreshMs, refreshMs, budgetMs);
      heardNothing = false;
      if (!channel.keepOpen()) return handedOver(member) ?? pollWaiter.pause(tries, busy, budgetMs, signal);
      const { epoch } = member;
      const listening = epoch === channel.epoch && channel.live;
      if (listening) {
        await until(member, () => member.fence !== undefined || member.epoch !== channel.epoch || !channel.live, waitMs, signal);
      } else {
        // Until the stream confirms, a handover may pass unheard: poll, and attempt once it is live.
        await until(member, () => member.fence !== undefined || channel.live, retryDelayMs(tries, busy, budgetMs), signal);
      }
      // The next attempt is sent now: every handover after it reaches this waiter if the stream is live.
      member.epoch = channel.live ? channel.epoch : -1;
      // Before the holder's time ran out: the lock can only have come by a release (or a give-back).
      heardNothing = listening && member.epoch === epoch && member.fence === undefined && waitMs < busy.busyForMs;
      return handedOver(member);
    },
    // The lock taken by the attempt after such a pause was, most likely, handed over by a release
    // whose message never came: the stream may have ended unseen, and the channel counts it (see
    // lost()). A look after the holder's TTL, or this call's own hold come too late (-1), tells nothing.
    granted: () => heardNothing && channel.lost(),
    close: () => channel.leave(ticket),
  };
}

/** The fence of a handover that reached the member, taken once. */
function handedOver(member: Member): number | undefined {
  const { fence } = member;
  member.fence = undefined;
  return fence;
}

/** Waits until `done()` holds, `ms` pass, or the signal aborts; the member's wakers cut a sleep short to look. */
async function until(member: Member, done: () => boolean, ms: number, signal?: AbortSignal): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done() && performance.now() < deadline) await sleep(deadline - performance.now(), signal, member.wakers);
}
