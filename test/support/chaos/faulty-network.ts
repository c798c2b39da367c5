import { sleep } from "../../../src/waiting/backoff.ts";
import { Dice } from "./dice.ts";

/** How one run's network misbehaves; rates are per mille of requests. */
export interface Faults {
  seed: number;
  /** Lost before Redis saw them. */
  dropRequestPm: number;
  /** Lost after Redis applied the request. */
  dropReplyPm: number;
  duplicatePm: number;
  maxDelayMs: number;
  /** Requests or replies held back by `longMs` more: past a short timeoutMs, so they land after the call gave up. */
  longPm: number;
  longMs: number;
}

/** What the network did, for a run's summary. */
export interface NetStats {
  requests: number;
  droppedRequests: number;
  droppedReplies: number;
  duplicated: number;
  long: number;
}

type Fetch = typeof fetch;

/**
 * A network (for withFetch) that loses requests and replies, sends requests twice and delays both
 * ways, until healed. It knows which requests it still holds, so a run can wait for those that
 * land after the call that sent them gave up.
 */
export class FaultyNetwork {
  readonly stats: NetStats = { requests: 0, droppedRequests: 0, droppedReplies: 0, duplicated: 0, long: 0 };
  readonly #faults: Faults;
  readonly #dice: Dice;
  readonly #log: (line: string) => void;
  #healed = false;
  #inFlight = 0;
  #lastActivity = performance.now();

  constructor(faults: Faults, log: (line: string) => void) {
    this.#faults = faults;
    this.#dice = new Dice(faults.seed);
    this.#log = log;
  }

  readonly wrap = (real: Fetch): Fetch => (input, init) => {
    // A push wait's stream only carries wake-ups: a lost one costs a waiter time (it tries again
    // after the holder's TTL), which no check here could see. So streams are delayed, never lost.
    if (new Headers(init?.headers).get("accept") === "text/event-stream") {
      return sleep(this.#healed ? 0 : this.#uniformDelayMs()).then(() => real(input, init));
    }
    return this.#tracked(() => (this.#healed ? real(input, init) : this.#misbehave(real, input, init)));
  };

  /** From now on requests go straight through; those it holds back still land late. */
  heal(): void {
    this.#healed = true;
  }

  /** Milliseconds since a request last went out or came back; 0 while any is out. */
  quietForMs(): number {
    return this.#inFlight ? 0 : performance.now() - this.#lastActivity;
  }

  async #tracked(send: () => Promise<Response>): Promise<Response> {
    this.#inFlight++;
    try {
      return await send();
    } finally {
      this.#inFlight--;
      this.#lastActivity = performance.now();
    }
  }

  async #misbehave(real: Fetch, input: Parameters<Fetch>[0], init: Parameters<Fetch>[1]): Promise<Response> {
    const { stats } = this;
    const faults = this.#faults;
    stats.requests++;
    const body = String(init?.body).slice(0, 100);
    await sleep(this.#delayMs(`request ${body}`));
    if (this.#happens(faults.dropRequestPm)) {
      stats.droppedRequests++;
      this.#log(`net LOST REQUEST ${body}`);
      throw new TypeError("fetch failed: connection refused");
    }
    if (this.#happens(faults.duplicatePm)) {
      stats.duplicated++;
      this.#log(`net DUP ${body}`);
      await (await real(input, init)).text();
    }
    const response = await real(input, init);
    if (this.#happens(faults.dropReplyPm)) {
      stats.droppedReplies++;
      this.#log(`net LOST REPLY ${body}`);
      await response.text();
      throw new TypeError("fetch failed: connection reset after the request was sent");
    }
    await sleep(this.#delayMs(`reply to ${body}`));
    return response;
  }

  #happens(perMille: number): boolean {
    return this.#dice.fraction() * 1000 < perMille;
  }

  #uniformDelayMs(): number {
    return Math.floor(this.#dice.fraction() * this.#faults.maxDelayMs);
  }

  #delayMs(what: string): number {
    const ms = this.#uniformDelayMs();
    if (!this.#happens(this.#faults.longPm)) return ms;
    this.stats.long++;
    this.#log(`net HELD BACK ${what}`);
    return ms + this.#faults.longMs;
  }
}
