// Section 6 of the report: the realistic-latency scenario (issue 26).
import { cellLabel, type LatencyAtRtt, type LatencyResults, type LatencyRow } from "../scenarios/latency.ts";
import { connectionsPerAcquire } from "../scenarios/latency-cell.ts";
import { middle, middleHalf, num, pairedRatios, table, type MiddleHalf } from "./format.ts";

export const PEER_ID = "upstash-lock";

/** The PING that handoffs are compared with: after a pause as long as a hold, as a release comes. */
export const pingRounds = (at: LatencyAtRtt): number[] => at.pings.map((p) => p.afterPauseMs.p50);

/** One figure of each round, judged on their middle half. */
export const perRound = (row: LatencyRow, figure: (r: LatencyRow["rounds"][number]) => number): MiddleHalf => middleHalf(row.rounds.map(figure));

/** This row's sections/s ÷ @upstash/lock's in the same cell, round by round. */
export function versusPeer(at: LatencyAtRtt, row: LatencyRow): MiddleHalf | undefined {
  const peer = at.rows.find((r) => r.cell === row.cell && r.id === PEER_ID);
  if (!peer || peer === row) return undefined;
  return middleHalf(pairedRatios(row.rounds.map((r) => r.sectionsPerSec), peer.rounds.map((r) => r.sectionsPerSec)));
}

/**
 * The most a lock that hands over after each release could reach, ÷ @upstash/lock in this row's
 * cell, round by round: a section takes at least the hold plus one round trip (the release going
 * to Redis, the handover coming back), taken here as that round's PING p50.
 */
export function ceilingVersusPeer(at: LatencyAtRtt, row: LatencyRow, holdMs: number): MiddleHalf | undefined {
  const peer = at.rows.find((r) => r.cell === row.cell && r.id === PEER_ID);
  if (!peer || peer === row) return undefined;
  return middleHalf(pairedRatios(pingRounds(at).map((ping) => 1000 / (holdMs + ping)), peer.rounds.map((r) => r.sectionsPerSec)));
}

/** This row's handoff p50 ÷ the PING p50, round by round (each round's PINGs ran just before its cells). */
export const versusPing = (at: LatencyAtRtt, row: LatencyRow): MiddleHalf =>
  middleHalf(pairedRatios(row.rounds.map((r) => r.handoffP50Ms), pingRounds(at)));

export function latencySection(results: LatencyResults): string {
  const { plan } = results;
  const pings = table(["RTT", "PING p50 after a pause, ms", "PING p50 back to back, ms"], results.rtts.map((at) => [
    `${at.rttMs} ms`, middle(middleHalf(pingRounds(at)), 2), middle(middleHalf(at.pings.map((p) => p.backToBackMs.p50)), 2),
  ]), 1);
  const rows = results.rtts.flatMap((at) => at.rows.map((row) => rowCells(at, row)));
  const headers = ["RTT", "cell", "library", "sections/s", "÷ @upstash/lock", "handoff to a waiter p50 ms", "÷ PING p50",
    "waiting requests / s per waiter (mean · busiest)", "longest ÷ mean wait", "most overtaken in one wait", "new connections per acquire"];
  const overlaps = results.rtts.flatMap((at) => at.rows.flatMap((row) => {
    const n = row.rounds.reduce((sum, r) => sum + r.overlaps, 0);
    return n > 0 ? [`${row.label} at ${at.rttMs} ms, ${row.cell}: ${n}`] : [];
  }));
  return [
    method(results),
    "",
    `PINGs through the same proxy and server, ${plan.pingsPerRound} per round before the round's cells, each after a ${plan.pauseMs} ms pause and then one back to back:`,
    "",
    pings,
    "",
    table(headers, rows, 3),
    "",
    overlaps.length === 0
      ? "Mutual exclusion held throughout: no holder's acquire() resolved before the previous holder called release()."
      : `**Overlapping critical sections seen**: ${overlaps.join(", ")}.`,
  ].join("\n");
}

function rowCells(at: LatencyAtRtt, row: LatencyRow): string[] {
  const peer = versusPeer(at, row);
  return [
    `${at.rttMs} ms`, cellLabel(row.cell, row.clients), row.label,
    middle(perRound(row, (r) => r.sectionsPerSec), 1),
    peer ? middle(peer, 2, "×") : "",
    middle(perRound(row, (r) => r.handoffP50Ms), 2),
    middle(versusPing(at, row), 2, "×"),
    `${num(perRound(row, (r) => r.waitingRequestsPerSec.mean).mean)} · ${num(perRound(row, (r) => r.waitingRequestsPerSec.max).mean)}`,
    `${num(perRound(row, (r) => r.starvation).mean)}×`,
    String(Math.max(...row.rounds.map((r) => r.mostOvertaken))),
    middle(perRound(row, connectionsPerAcquire), 3),
  ];
}

function method(results: LatencyResults): string {
  const { plan } = results;
  return [
    `How: the HTTP libraries reach the local server through a TCP proxy on loopback, in a child process of its own, at RTT ${plan.rttsMs.map((r) => `${r}`).join(", ")} ms.`,
    "It passes each direction's bytes on RTT/2 after they arrive, so a request and its response cost one RTT more; a new",
    "connection's first bytes wait 2 × RTT first, as TCP and TLS 1.3 handshakes would cost (a request on a new connection",
    "costs 3 RTT). RTT 0 passes bytes straight on. The proxy counts the connections it accepts: \"new connections per",
    "acquire\" is those accepted during the timed stretch ÷ the acquires in it. Before it, untimed, the clients warm up in",
    `pairs, all pairs at once: each waits once while its partner holds the lock ${plan.warmHoldMs} ms + 2 RTT, so what a warm client keeps`,
    "open (keep-alive connections, a lock set's stream) is open when the timed stretch starts. Each client is its own",
    "`@upstash/redis` instance and, for fencelock, its own `createLocks`.",
    "Each library's run of a cell gets a port of its own on the proxy: its clients share Node's connection pool for that",
    "origin with each other only, and nothing another run leaves behind (a stream closing late) counts against it. Hold",
    `${plan.holdMs} ms. ${plan.rounds} round${plan.rounds === 1 ? "" : "s"} per RTT, ${plan.cellMs / 1000} s per library, cell and round, the libraries in a new`,
    "random order in each cell; each figure is the mean of the middle half of its round-by-round values (a quarter of the",
    "rounds dropped at each end), the quartiles in brackets. Ratios are taken round by round: against @upstash/lock's run",
    "of the same cell and round, and against the PINGs of the same round. Cells as in sections 2 and 3; 2b, with",
    `${plan.handoffClients} clients, is also the cell of ${plan.handoffClients} contenders (section 3's setup is the same).`,
  ].join("\n");
}
