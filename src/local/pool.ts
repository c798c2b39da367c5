import type { Redis } from "ioredis";
import { RedisUnavailableError } from "./errors.ts";

/**
 * Dedicated connections for MULTI/EXEC, so one transaction owns its connection from MULTI to
 * EXEC and no other request's commands can land inside it.
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
    const connection = await this.#take();
    this.#busy.add(connection);
    try {
      return await work(connection);
    } finally {
      this.#busy.delete(connection);
      this.#giveBack(connection);
    }
  }

  close(): void {
    this.#closed = true;
    for (const connection of [...this.#idle, ...this.#busy]) connection.disconnect();
    this.#idle.length = 0;
  }

  async #take(): Promise<Redis> {
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

  #giveBack(connection: Redis): void {
    // Not ready means the transaction's fate on that connection is unknown: never reuse it.
    if (!this.#closed && connection.status === "ready" && this.#idle.length < this.#maxIdle) {
      this.#idle.push(connection);
    } else {
      connection.disconnect();
    }
  }
}

function closedError(): RedisUnavailableError {
  return new RedisUnavailableError("the local Upstash server is closed");
}
