// A held lock on the client: its deadline by the local clock, its signal, heartbeat and release.
/// <reference lib="esnext.disposable" preserve="true" />
// Kept in the emitted lease.d.ts: Lease is AsyncDisposable, and a project without that lib could not import fencelock.
import { driftMs, type LockBackend, type ReleaseOutcome } from "../core/backend.ts";
import { LockLostError } from "../core/errors.ts";
import { newToken } from "../core/keys.ts";

/** What a Lease asks of its lock set; kept apart so the Lease knows nothing of Redis. */
export type LeaseBackend = Pick<LockBackend, "heartbeat" | "release">;

export interface LeaseInit {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  readonly leaseMs: number;
  /** performance.now() deadline; undefined for a resumed lease not yet confirmed. */
  readonly validUntil: number | undefined;
}

/**
 * A held lock. `fence` is the token to hand to downstream storage; `signal` aborts
 * when the lease lapses, is lost or is released, so fetches made under it stop too.
 */
export class Lease implements AsyncDisposable {
  declare readonly name: string;
  declare readonly fence: number;
  readonly #owner: string;
  readonly #leaseMs: number;
  readonly #backend: LeaseBackend;
  readonly #releaseId: string;
  #validUntil: number | undefined;
  // Made on first read of `signal`: most leases never need one, and it is a measurable share of an acquire.
  #controller: AbortController | undefined;
  #lost: LockLostError | undefined;
  #lostWhy: string | undefined;
  #release: Promise<ReleaseOutcome> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(init: LeaseInit, backend: LeaseBackend) {
    this.name = init.name;
    this.fence = init.fence;
    this.#owner = init.owner;
    this.#leaseMs = init.leaseMs;
    this.#backend = backend;
    // One id for every try of this lease's release, so a retried release is a no-op.
    this.#releaseId = newToken();
    this.#validUntil = init.validUntil;
  }

  /** Secret owner token: pass it to resume() or acquire({ owner }); never log it. */
  get owner(): string {
    return this.#owner;
  }

  /** Aborts when the lease lapses, is lost or is released. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      // #watch aborts it at once for a lease already lost.
      if (this.#lostWhy !== undefined || this.#validUntil !== undefined) this.#watch();
    }
    return this.#controller.signal;
  }

  /** Milliseconds this lease can still be trusted, by the local monotonic clock; 0 once lapsed. */
  remainingMs(): number {
    if (this.#validUntil === undefined || this.#lostWhy !== undefined) return 0;
    return Math.max(0, this.#validUntil - performance.now());
  }

  /** Extends the lease to at least its full length. Throws LockLostError when it is no longer held. */
  async heartbeat(): Promise<void> {
    this.#throwIfLost();
    const sentAt = performance.now();
    // Lost stays lost: lapsed or released while this was out, the lease is lost whatever came back, a failure too.
    const ttlMs = await this.#backend.heartbeat(this, this.#leaseMs).finally(() => this.#throwIfLost());
    const confirmed = this.#validUntil;
    if (ttlMs === null) this.#end("it expired or passed to another holder");
    // Never earlier than before: Redis never shortens a TTL (test "never fails a heartbeat…").
    else this.#validUntil = Math.max(sentAt + ttlMs - driftMs(ttlMs), confirmed ?? 0);
    // Lost, or the reply came after the extension it reports ran out.
    this.#throwIfLost();
    // A running timer reads the new deadline when it fires; only a resumed lease's signal has none yet.
    if (this.#controller && confirmed === undefined) this.#watch();
  }

  /**
   * Gives the hold back. Resolves "released", or "expired" when the lease had already
   * lapsed; never throws for a lease that is not held. Calling it again is harmless. The lease
   * is over from the call on: Redis may pass the lock on before the reply comes, or without it.
   */
  release(): Promise<ReleaseOutcome> {
    this.#end("it was released");
    this.#release ??= this.#backend.release(this, this.#releaseId).catch((error: unknown) => {
      this.#release = undefined;
      throw error;
    });
    return this.#release;
  }

  // As withLock: a failed release must not replace the block's own error; the lease lapses by its TTL.
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release().catch(() => undefined);
  }

  /**
   * Throws LockLostError once the lease is lost or has lapsed; a resumed lease not yet confirmed
   * has no time of its own to run out.
   */
  #throwIfLost(): void {
    if (this.#validUntil !== undefined && this.remainingMs() === 0) this.#end("it lapsed before a heartbeat extended it");
    if (this.#lostWhy !== undefined) throw this.#lostError();
  }

  /** Marks the lease lost for good; the first reason given is the one reported. */
  #end(why: string): void {
    this.#lostWhy ??= why;
    clearTimeout(this.#timer);
    if (this.#controller && !this.#controller.signal.aborted) this.#controller.abort(this.#lostError());
  }

  // Called only once #end has set #lostWhy.
  #lostError(): LockLostError {
    return (this.#lost ??= new LockLostError(this.name, this.fence, this.#lostWhy!));
  }

  // One timer at a time; fired before a deadline (moved, or not quite reached), it waits on for the
  // rest. Cleared as the lease ends, and unref'd where the runtime can: a lease keeps no process
  // running (AbortSignal.timeout kept Deno running until the deadline, release or not).
  #watch(): void {
    const waitMs = Math.ceil(this.remainingMs());
    if (!waitMs) return this.#end("it lapsed before a heartbeat extended it");
    const timer = (this.#timer = setTimeout(() => this.#watch(), waitMs));
    (timer as { unref?: () => void }).unref?.() ?? (globalThis as { Deno?: { unrefTimer(id: unknown): void } }).Deno?.unrefTimer(timer);
  }
}
