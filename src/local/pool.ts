// Redis connections that one user at a time owns, kept for reuse.
import type { Redis } from "ioredis";
import { RedisUnavailableError } from "./errors.ts";

/**
 * Connections that one user at a time owns: a transaction from MULTI to EXEC (so no other
 * request's commands can land inside it), or a subscription stream for its lifetime (so that
 * PUBLISH counts each stream, as Upstash does). Reusing them saves a TCP connect, CLIENT SETNAME
 * and INFO (2-3 ms on loopback) per transaction or stream.
 */
export class ConnectionPool {
  readonly #open: () => Promise<Redis>;
  readonly #maxIdle: number;
  readonly #idle: Redis[] = [];
  readonly #busy = new Set<Redis>();
  #closed = false;

  constructor(open: () => Promise<Redis>, maxIdle = 4) {
    this.#open = open;
    this.#maxIdle = maxIdle;
  }

  async use<T>(work: (connection: Redis) => Promise<T>): Promise<T> {
    const connection = await this.take();
    try {
      return await work(connection);
    } finally {
      this.giveBack(connection);
    }
  }

  /** A connection for the caller alone, until it gives it back. */
  async take(): Promise<Redis> {
    const connection = await this.#idleOrNew();
    this.#busy.add(connection);
    return connection;
  }

  /** Takes back a connection in the state it was taken in (outside a transaction, subscribed to nothing). */
  giveBack(connection: Redis): void {
    this.#busy.delete(connection);
    // Not ready means the last user's fate on that connection is unknown: never reuse it.
    if (!this.#closed && connection.status === "ready" && this.#idle.length < this.#maxIdle) {
      this.#idle.push(connection);
    } else {
      connection.disconnect();
    }
  }

  /**
   * Closes a connection that its user could not bring back to the state it was taken in.
   * giveBack() would keep it: ioredis reports "ready" until Redis has closed its end too.
   */
  discard(connection: Redis): void {
    this.#busy.delete(connection);
    connection.disconnect();
  }

  close(): void {
    this.#closed = true;
    for (const connection of [...this.#idle, ...this.#busy]) connection.disconnect();
    this.#idle.length = 0;
  }

  async #idleOrNew(): Promise<Redis> {
    if (this.#closed) throw closedError();
    for (let idle = this.#idle.pop(); idle; idle = this.#idle.pop()) {
      if (idle.status === "ready") return idle;
      idle.disconnect(); // dropped while idle (Redis restarted): a fresh one is cheaper than waiting
    }
    const opened = await this.#open();
    if (!this.#closed) return opened;
    opened.disconnect();
    throw closedError();
  }
}

function closedError(): RedisUnavailableError {
  return new RedisUnavailableError("the local Upstash server is closed");
}
