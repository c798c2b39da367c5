// Server-sent events: one stream's framing, keep-alives and backlog limit, and the set of open streams.
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { HttpError } from "./errors.ts";
import { LIMIT_DEFAULTS } from "./options.ts";

/**
 * A comment line every 15 s keeps a quiet stream alive: Node's fetch (undici) gives up on a body
 * that sends nothing for 300 s, and proxies drop idle connections. Clients skip `:` lines.
 */
export const KEEP_ALIVE_MS = 15_000;

/** Redis drops a pub/sub client whose output buffer passes 32 MB; a reader that far behind is dropped too. */
const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;

/**
 * One event: `data: ` and the comma-separated fields, as Upstash sends them. A field holding a
 * line break would split the event (and could forge another one), so it goes out as a JSON
 * string literal on one line; @upstash/redis JSON-parses payloads, which restores the exact text.
 */
export function dataEvent(fields: readonly string[]): string {
  return `data: ${fields.map((field) => (/[\r\n]/.test(field) ? JSON.stringify(field) : field)).join(",")}\n\n`;
}

/**
 * A text/event-stream response that holds events back until open(): messages can arrive
 * between Redis confirming a subscription and the confirmation being written, and must follow it.
 */
export class EventStream {
  readonly #response: ServerResponse;
  readonly #onEnd: () => void;
  #held: string[] | undefined = [];
  #heldBytes = 0;
  #ended = false;
  #keepAlive: NodeJS.Timeout | undefined;

  /** `onEnd` runs once, whoever ends the stream: the client, Redis, the server or a slow reader. */
  constructor(response: ServerResponse, onEnd: () => void) {
    this.#response = response;
    this.#onEnd = onEnd;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Sends the headers and `first`, then what was held back; later events go out as they come. */
  open(headers: OutgoingHttpHeaders, first: readonly string[], keepAliveMs: number): void {
    if (this.#ended) return;
    this.#response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers });
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const event of [...first, ...held]) this.send(event);
    // Not for a stream those events already dropped (a reader far behind): nothing would clear it.
    if (!this.#ended) this.#keepAlive = setInterval(() => this.send(": ping\n\n"), keepAliveMs).unref();
  }

  send(event: string): void {
    if (this.#ended) return;
    if (this.#held) {
      this.#held.push(event);
      // Held back until open(), they count against the same limit as an open stream's backlog.
      this.#heldBytes += Buffer.byteLength(event);
      if (this.#heldBytes > MAX_BUFFERED_BYTES) this.end();
      return;
    }
    this.#response.write(event);
    if (this.#response.writableLength > MAX_BUFFERED_BYTES) {
      // Its connection goes too: ending politely would keep the backlog queued behind it.
      this.end();
      this.#response.destroy();
    }
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#keepAlive);
    // Before open() nothing was sent and the caller still owes the client a JSON error.
    if (this.#held) this.#held.length = 0;
    else this.#response.end();
    this.#onEnd();
  }
}

/**
 * The streams a server has open, at most `max` (each holds a Redis connection), so close() ends
 * them rather than leave subscriber connections behind.
 */
export class OpenStreams {
  readonly #ends = new Set<() => void>();
  readonly #max: number;
  #places = 0;
  #closed = false;

  constructor(max: number = LIMIT_DEFAULTS.maxStreams) {
    this.#max = max;
  }

  /**
   * Takes a place for a stream about to open, before anything awaits (so that no two requests
   * take the last one), or throws HTTP 503. Returns what gives it back, once however often called.
   */
  reserve(): () => void {
    if (this.#places >= this.#max) {
      throw new HttpError(503, `ERR local server: too many open streams (${this.#max}, maxStreams / --max-streams); close some or raise the limit`);
    }
    this.#places++;
    let released = false;
    return () => {
      if (!released) this.#places--;
      released = true;
    };
  }

  /** Registers a stream's `end`; once the server is closing, ends it at once instead. */
  add(end: () => void): void {
    if (this.#closed) end();
    else this.#ends.add(end);
  }

  delete(end: () => void): void {
    this.#ends.delete(end);
  }

  closeAll(): void {
    this.#closed = true;
    for (const end of [...this.#ends]) end();
  }
}
