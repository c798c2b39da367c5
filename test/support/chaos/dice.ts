import { prng } from "../chaotic-fetch.ts";

/** Seeded dice: the same seed draws the same plan, programs and network faults. */
export class Dice {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = prng(seed);
  }

  /** A number in [0, 1). */
  fraction(): number {
    return this.#next();
  }

  /** An integer from lo to hi, both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.#next() * (hi - lo + 1));
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#next() * list.length)]!;
  }

  chance(probability: number): boolean {
    return this.#next() < probability;
  }
}
