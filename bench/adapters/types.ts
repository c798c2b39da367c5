/**
 * One simulated client of one lock library: its own connection (own @upstash/redis instance
 * or own ioredis socket), as separate isolates or processes would have.
 */
export interface LockAdapter<H> {
  readonly name: string;
  /** Waits until held. Libraries that take an AbortSignal stop waiting when it aborts. */
  acquire(name: string, signal?: AbortSignal): Promise<H>;
  release(handle: H): Promise<void>;
  /** Extends the lease (fencelock heartbeat, @upstash/lock extend, ...), when the library has one. */
  heartbeat?(handle: H): Promise<void>;
  /** How often the library's own retry window ran out and acquire() had to be called again. */
  readonly exhausted: number;
  close(): Promise<void>;
}

export type Transport = "http" | "tcp";

/** A library under test: how to make one more client of it, and how it is configured. */
export interface Library {
  id: string;
  label: string;
  transport: Transport;
  /** The library's settings as used here, for the report. */
  settings: string;
  connect(): Promise<LockAdapter<unknown>>;
}

/** Calls attempt() until it returns a handle; counts exhausted retry windows; stops on abort. */
export async function untilAcquired<H>(
  attempt: () => Promise<H | undefined>,
  onExhausted: () => void,
  signal?: AbortSignal,
): Promise<H> {
  for (;;) {
    signal?.throwIfAborted();
    const handle = await attempt();
    if (handle !== undefined) return handle;
    onExhausted();
  }
}
