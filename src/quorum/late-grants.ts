// Grants that arrive after the vote: part of a lease that lives, given back once it was released.

/**
 * Tracks, per lease, the nodes whose acquire was still out when the lease was returned. Such a
 * node may grant much later (a retry of the request), when the lease has been released: then its
 * hold must be given back, or it would keep the node from the next holder for a whole lease.
 */
export class LateGrants {
  readonly #pending = new Map<string, number>();
  readonly #released = new Set<string>();

  /** Runs `settle(released)` when `call` resolves: `released` tells whether the lease was released meanwhile. */
  track<T>(owner: string, fence: number, call: Promise<T>, settle: (reply: T, released: boolean) => Promise<unknown>): void {
    const key = `${owner}.${fence}`;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    call
      .then((reply) => settle(reply, this.#released.has(key)))
      .catch(() => undefined)
      .finally(() => {
        const left = (this.#pending.get(key) ?? 1) - 1;
        if (left > 0) return void this.#pending.set(key, left);
        this.#pending.delete(key);
        this.#released.delete(key);
      });
  }

  /** The lease is being released: late grants for it are given back from now on. */
  released(owner: string, fence: number): void {
    const key = `${owner}.${fence}`;
    if (this.#pending.has(key)) this.#released.add(key);
  }
}
