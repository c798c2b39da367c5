// Grants that arrive after the vote: part of a lease that lives, given back once it was released.
import type { Integers } from "../redis/run-script.ts";

/**
 * Tracks, per lease, the nodes whose acquire was still out when the lease was returned. Such a
 * node may grant much later (a retry of the request), when the lease has been released: then its
 * hold must be given back, or it would keep the node from the next holder for a whole lease.
 * A lease and its reentrant joins share owner and fence, and a node counts their holds, not whose
 * they are: a grant goes back only where the release found nothing there, or it could take a
 * join's hold. Elsewhere it lapses with its TTL, which costs that node's vote, never safety.
 */
export class LateGrants {
  readonly #pending = new Map<string, number>();
  /** Each node's release of a lease released while grants for it were out. */
  readonly #releases = new Map<string, readonly Promise<Integers>[]>();

  /**
   * Runs `settle(reply, giveBack)` when `node`'s `call` resolves. `giveBack` is undefined while the
   * lease is not released; then true where that node's release found nothing.
   */
  track(owner: string, fence: number, node: number, call: Promise<Integers>, settle: (reply: Integers, giveBack: boolean | undefined) => Promise<unknown>): void {
    const key = `${owner}.${fence}`;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    call
      .then(async (reply) => settle(reply, this.#releases.has(key) ? await this.#releaseFoundNothing(key, node) : undefined))
      .catch(() => undefined)
      .finally(() => {
        const left = (this.#pending.get(key) ?? 1) - 1;
        if (left > 0) return void this.#pending.set(key, left);
        this.#pending.delete(key);
        this.#releases.delete(key);
      });
  }

  /** The lease is being released by `calls`, one per node. */
  released(owner: string, fence: number, calls: readonly Promise<Integers>[]): void {
    const key = `${owner}.${fence}`;
    if (this.#pending.has(key)) this.#releases.set(key, calls);
  }

  /**
   * Where the release took a hold, this grant had landed and went with it (or a join's did, and this
   * one stands in for it); where the release failed, a give-back could take a join's hold: the
   * grant lapses with its TTL instead.
   */
  async #releaseFoundNothing(key: string, node: number): Promise<boolean> {
    const reply = await this.#releases.get(key)?.[node]?.catch(() => undefined);
    return reply?.[0] === 0;
  }
}
