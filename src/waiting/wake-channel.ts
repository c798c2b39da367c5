// One SUBSCRIBE stream per channel, shared by all its push waiters: release.lua addresses each
// handover to the heir's channel (from its ticket) and ticket (in the message).
import { sha1Hex } from "../core/sha1.ts";
import type { WakeSubscriber } from "../core/client.ts";

/** A stream older than this is replaced: one can die without a word (fetch drops a body idle for 5 minutes, Upstash sends no keep-alives). */
const REFRESH_MS = 60_000;
/**
 * After a stream failed before it confirmed, waits poll for a cooldown before another is tried: 1 s,
 * doubling up to a minute. A failover or a dropped connection passes in seconds; a refusal stays.
 */
const MAX_COOLDOWN_MS = 60_000;
/**
 * A stream unconfirmed this long has failed: a proxy that buffers event streams holds the
 * confirmation back for good, and @upstash/redis reports no error for a stream that ends unconfirmed.
 */
const CONFIRM_MS = 5_000;
/** On Workers a stream belongs to the request that opened it, and nothing may outlive a request. */
export const ON_WORKERS = globalThis.navigator?.userAgent === "Cloudflare-Workers";
/**
 * How long a stream outlives its last waiter, so that the next wait finds it open: a new stream
 * costs a new connection. Zero on Workers.
 */
const IDLE_MS = ON_WORKERS ? 0 : 2_000;

/** One waiter's place on the channel. */
export interface Member {
  readonly owner: string;
  /** The fence of a handover to this waiter, until it takes it. */
  fence?: number;
  /** The channel's epoch when this waiter's last attempt was sent while a stream was live; -1 if none was. */
  epoch: number;
  /** Cut a sleep short when something changes for this waiter. */
  readonly wakers: Set<() => void>;
}

/** Where a channel's streams come from, and how release.lua finds it. */
interface ChannelSpec {
  /** What a push ticket carries so that release.lua publishes here (see wake-channels.ts). */
  readonly address: string;
  /** A new stream on the channel; undefined where the client cannot open one. */
  readonly open: () => WakeSubscriber | undefined;
  /** Called once the channel has closed its streams with no waiter left. */
  readonly onIdle?: () => void;
}

export interface WakeChannel {
  /** What a push ticket carries so that release.lua publishes to this channel. */
  readonly address: string;
  /** Counts up whenever the stream may have missed a message: a member from an older epoch looks again. */
  readonly epoch: number;
  readonly live: boolean;
  /** Registers a waiter before its first attempt, so a handover right after that attempt reaches it. */
  join(ticket: string, owner: string): Member;
  leave(ticket: string): void;
  /** Opens a stream if none is open or on the way, or a fresh one beside an old one; false when waits must poll. */
  keepOpen(): boolean;
  /**
   * A handover's message did not come through the live stream. At the second with no message
   * between, the stream counts as failed: an @upstash/redis stream that ends (a server or its
   * Redis restarted) says nothing.
   */
  lost(): void;
}

interface Stream {
  readonly subscriber: WakeSubscriber;
  readonly openedAt: number;
}

export function wakeChannel({ address, open: openStream, onIdle }: ChannelSpec, warn: (message: string) => void): WakeChannel {
  const members = new Map<string, Member>();
  let live: Stream | undefined;
  let pending: Stream | undefined;
  let epoch = 0;
  let failedAt = -Infinity;
  let cooldownMs = 0;
  // Handovers lost (see lost()) since a stream last brought a message; a waiter that left holding one
  // (a give-back) makes one look lost too, so the stream counts as failed at the second.
  let unheard = 0;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const wakeAll = () => members.forEach((member) => member.wakers.forEach((wake) => wake()));

  function open(): void {
    const subscriber = openStream();
    if (!subscriber) return void (failedAt = performance.now(), (cooldownMs = MAX_COOLDOWN_MS));
    const stream = { subscriber, openedAt: performance.now() };
    pending = stream;
    subscriber.on("subscribe", () => confirmed(stream));
    subscriber.on("error", (event) => failed(stream, event));
    subscriber.on("message", (event) => ((unheard = 0), deliver(members, event)));
  }

  function confirmed(stream: Stream): void {
    if (stream !== pending) return;
    // The old stream stayed open until now, so no message fell between the two.
    if (live) close(live);
    live = stream;
    pending = undefined;
    cooldownMs = unheard = 0;
    wakeAll();
  }

  function failed(stream: Stream, event: unknown): void {
    if (stream === pending) {
      pending = undefined;
      failedAt = performance.now();
      cooldownMs = Math.min(cooldownMs * 2 || 1_000, MAX_COOLDOWN_MS);
      warn(`a SUBSCRIBE stream for push wake-ups failed (${String(event)}); waits poll until one opens, tried again after 1 s, then less often`);
    } else if (stream === live) {
      live = undefined;
      epoch++;
    }
    close(stream);
    wakeAll();
  }

  function closeWhenIdle(): void {
    if (members.size > 0) return;
    if (live) close(live);
    if (pending) close(pending);
    live = pending = undefined;
    epoch++;
    onIdle?.();
  }

  return {
    address,
    get epoch() {
      return epoch;
    },
    get live() {
      return live !== undefined;
    },
    join(ticket, owner) {
      clearTimeout(idleTimer);
      const member = { owner, epoch: live ? epoch : -1, wakers: new Set<() => void>() };
      members.set(ticket, member);
      return member;
    },
    leave(ticket) {
      members.delete(ticket);
      if (members.size > 0) return;
      // Only with a stream to close: a timer per uncontended acquire would cost time, and keep a Node process alive 2 s.
      if (live || pending) idleTimer = setTimeout(closeWhenIdle, IDLE_MS);
      // Nothing open: a per-lock channel (Cluster) goes now, or every lock ever taken would keep one.
      else onIdle?.();
    },
    keepOpen() {
      const now = performance.now();
      if (pending && now - pending.openedAt > CONFIRM_MS) failed(pending, `no confirmation within ${CONFIRM_MS / 1000} s; a proxy that buffers event streams?`);
      if (pending || (live && now - live.openedAt < REFRESH_MS)) return true;
      // After a failure no stream is tried for a while; an old one serves meanwhile.
      if (now - failedAt < cooldownMs) return live !== undefined;
      open();
      return live !== undefined || pending !== undefined;
    },
    lost: () => void (++unheard > 1 && live && failed(live, "lost")),
  };
}

function close(stream: Stream): void {
  stream.subscriber.unsubscribe().catch(() => undefined);
}

/**
 * Hands a message 'ticket:fence:digest' to its member if release.lua signed it for that member's
 * owner: only it and the waiter know the owner token, so one who may publish but not read keys cannot forge it.
 */
function deliver(members: Map<string, Member>, event: unknown): void {
  // Any event reads safely so: a field of a primitive is undefined.
  const message = String((event as { message?: unknown } | null | undefined)?.message);
  const [, ticket = "", fence, signed] = /^([0-9a-f]{32}):([1-9]\d{0,15}):([0-9a-f]{40})$/.exec(message) ?? [];
  const member = members.get(ticket);
  if (!member || !fence || !Number.isSafeInteger(+fence)) return;
  // Checked at once (see sha1.ts): the waiter is woken in the same turn as its message.
  if (signed !== sha1Hex(`${fence}:${member.owner}`)) return;
  member.fence = +fence;
  member.wakers.forEach((wake) => wake());
}
