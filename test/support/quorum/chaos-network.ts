// A misbehaving network in front of each node of a quorum, each with dice of its own, and one in
// front of the fenced store's server: a request goes through the network of the server it is for.
import { FaultyNetwork, type Faults, type NetStats } from "../chaos/faulty-network.ts";

type Fetch = typeof fetch;

export class NodeNetworks {
  /** One per node, in node order; then the store's. */
  readonly networks: FaultyNetwork[];
  /** Each server's origin (scheme, host and port), in the networks' order. */
  readonly #origins: string[];

  /** `urls[i]` is reached through a network misbehaving as `faults[i]`. */
  constructor(urls: string[], faults: Faults[], log: (line: string) => void) {
    this.#origins = urls.map((url) => new URL(url).origin);
    this.networks = faults.map((f, i) => new FaultyNetwork(f, (line) => log(`${labelOf(i, urls.length)} ${line}`)));
  }

  /** For withFetch: each request through its server's network; any other goes straight through. */
  readonly wrap = (real: Fetch): Fetch => {
    const wrapped = this.networks.map((network) => network.wrap(real));
    return (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      const i = this.#origins.indexOf(new URL(url).origin);
      return (i < 0 ? real : wrapped[i]!)(input, init);
    };
  };

  heal(): void {
    for (const network of this.networks) network.heal();
  }

  /** Milliseconds since any network last carried a request; 0 while any holds one. */
  quietForMs(): number {
    return Math.min(...this.networks.map((network) => network.quietForMs()));
  }

  /** Every network's counts, added up. */
  get stats(): NetStats {
    const total: NetStats = { requests: 0, droppedRequests: 0, droppedReplies: 0, duplicated: 0, long: 0 };
    for (const { stats } of this.networks) for (const key of Object.keys(total) as (keyof NetStats)[]) total[key] += stats[key];
    return total;
  }
}

function labelOf(i: number, count: number): string {
  return i === count - 1 ? "store" : `n${i}`;
}
