// The round trips the quorum targets compare with: a trivial script through each node's local
// server, one node at a time and to all nodes at once, sampled in turns with the lock cycles.
import { Redis } from "@upstash/redis";
import type { Endpoint } from "../harness/server.ts";
import { shuffled, summarize, type Summary } from "../harness/stats.ts";
import { now } from "../harness/timing.ts";

const PROBE = "return 1";

export interface RoundTrips {
  /** What was sent: a trivial script, through each node's own local server. */
  probe: string;
  /** Per node, one node at a time. */
  perNodeMs: Summary[];
  /** The majority-th lowest of the nodes' p50s: the slowest node a majority needs. */
  majorityNodeP50: number;
  /** The same script to all nodes at once, as an acquire sends: until a majority had answered. */
  fanOutMajorityMs: Summary;
  /** ... and until every node had. */
  fanOutAllMs: Summary;
}

type Probe = () => Promise<unknown>;

/** One probe client per node, and the round trips timed through them so far. */
export class RoundTripProbes {
  readonly #probes: Probe[];
  readonly #majority: number;
  readonly #perNode: number[][];
  readonly #fanMajority: number[] = [];
  readonly #fanAll: number[] = [];

  constructor(probes: Probe[]) {
    this.#probes = probes;
    this.#majority = Math.floor(probes.length / 2) + 1;
    this.#perNode = probes.map(() => []);
  }

  static async connect(endpoints: readonly Endpoint[]): Promise<RoundTripProbes> {
    return new RoundTripProbes(await probeClients(endpoints));
  }

  /** Untimed round trips to every node at once. */
  async warm(times: number): Promise<void> {
    for (let n = 0; n < times; n++) await Promise.all(this.#probes.map((p) => p()));
  }

  /** One node at a time, in a random order. */
  async eachNodeAlone(): Promise<void> {
    for (const node of shuffled([...this.#probes.keys()])) this.#perNode[node]!.push(await timed(this.#probes[node]!));
  }

  /** To all nodes at once, as an acquire sends: until a majority answered, and until all did. */
  async allNodesAtOnce(): Promise<void> {
    const start = now();
    const answered: number[] = [];
    await Promise.all(this.#probes.map((p) => p().then(() => answered.push(now() - start))));
    answered.sort((a, b) => a - b);
    this.#fanMajority.push(answered[this.#majority - 1]!);
    this.#fanAll.push(answered.at(-1)!);
  }

  summary(): RoundTrips {
    const p50s = this.#perNode.map((ms) => summarize(ms).p50).sort((a, b) => a - b);
    return {
      probe: `EVALSHA of \`${PROBE}\` (no keys) through the node's local server, by @upstash/redis`,
      perNodeMs: this.#perNode.map(summarize),
      majorityNodeP50: p50s[this.#majority - 1] ?? Number.NaN,
      fanOutMajorityMs: summarize(this.#fanMajority),
      fanOutAllMs: summarize(this.#fanAll),
    };
  }
}

async function timed(call: () => Promise<unknown>): Promise<number> {
  const start = now();
  await call();
  return now() - start;
}

/** One @upstash/redis client per node, configured as the lock clients are, with the probe script loaded. */
async function probeClients(endpoints: readonly Endpoint[]): Promise<Probe[]> {
  return Promise.all(endpoints.map(async (e) => {
    const redis = new Redis({ url: e.url, token: e.token });
    const sha = await redis.scriptLoad(PROBE);
    return () => redis.evalsha(sha, [], []);
  }));
}
