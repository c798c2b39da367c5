// Sequential uncontended rounds: the libraries take turns cycle by cycle, one client each.
import type { RedisStats } from "../harness/commandstats.ts";
import { allRequests } from "../harness/requests.ts";
import { round, shuffled } from "../harness/stats.ts";
import { now } from "../harness/timing.ts";
import { asClient, oneCycle, type Client } from "./clients.ts";
import type { Tally } from "./uncontended.ts";

/**
 * One sequential round: the libraries take turns of one cycle each, in a new random order every
 * turn, so a slow spell of this shared machine (milliseconds to seconds) lands on all of them
 * alike rather than deciding a ratio, and no library always follows the same one. Each cycle
 * starts cold, after another library's, as in an application that does other work between locks.
 */
export async function turnByTurn(groups: Client[][], msEach: number, tallies: Tally[]): Promise<void> {
  const spent = groups.map(() => 0);
  const ops = groups.map(() => 0);
  const end = now() + msEach * groups.length;
  while (now() < end) {
    for (const i of shuffled([...groups.keys()])) {
      const client = groups[i]?.[0];
      const tally = tallies[i];
      if (!client || !tally) continue;
      const requestsBefore = allRequests.requests;
      const start = now();
      await asClient(client, () => oneCycle(client, `uncontended:${client.index}`));
      ops[i] = (ops[i] ?? 0) + 1;
      spent[i] = (spent[i] ?? 0) + now() - start;
      tally.requests += allRequests.requests - requestsBefore;
    }
  }
  tallies.forEach((tally, i) => {
    tally.ops += ops[i] ?? 0;
    tally.ms += spent[i] ?? 0;
    tally.rounds.push(round(((ops[i] ?? 0) * 1000) / (spent[i] || 1), 1));
  });
}

/**
 * Redis commands per cycle, and the time Redis spends executing them, which turn-by-turn
 * rounds cannot tell apart: a counted run per library.
 */
const COUNTED_CYCLES = 200;

export async function countCommands(groups: Client[][], stats: RedisStats, tallies: Tally[], cycles = COUNTED_CYCLES): Promise<void> {
  for (const [i, clients] of groups.entries()) {
    const client = clients[0];
    const tally = tallies[i];
    if (!client || !tally) continue;
    const { ran, micros } = await stats.timeSent(async () => {
      for (let n = 0; n < cycles; n++) await oneCycle(client, `uncontended:${client.index}`);
    });
    // Scaled to the measured cycles, so that commandsPerOp and redisMicrosPerOp divide out the same way.
    const scale = tally.ops / cycles;
    for (const [name, count] of Object.entries(ran)) {
      tally.commands[name] = (tally.commands[name] ?? 0) + count * scale;
    }
    tally.redisMicros += micros * scale;
  }
}

