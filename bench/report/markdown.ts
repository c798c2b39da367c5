import type { LatencyResults } from "../scenarios/latency.ts";
import type { Environment } from "./env.ts";
import { check } from "./format.ts";
import type { BenchResults } from "./results.ts";
import {
  environmentSection, handoffSection, scalingSection, settingsSection, sizeSection, uncontendedSection,
} from "./sections.ts";
import { latencySection } from "./latency.ts";
import { quorumSection } from "./quorum.ts";
import { tcpSection, tcpTargetLines } from "./tcp.ts";
import { evaluateTargets } from "./targets.ts";
import { connectionsTarget, latencyTargets } from "./targets-latency.ts";

/** The whole report: printed by `npm run bench` and written to bench/results/latest.md. */
export function renderMarkdown(results: BenchResults): string {
  const { uncontended, scaling } = results.plans;
  return [
    "# fencelock benchmark",
    "",
    environmentSection(results),
    "",
    method(results),
    "",
    `## 1. Uncontended acquire + release (${uncontended.rounds} rounds per cell. 16 clients: each library runs alone, ${uncontended.durationMs / 1000} s in all, in a new random order each round. Sequential: ${uncontended.durationMs / 1000} s × libraries in all, in turns of one cycle per library in random order, so each library's time is what its cycles took)`,
    "",
    "fencelock runs with default options here (no `wake`, the row fencelock (default)): an uncontended acquire never waits, so how it would wait does not come into it.",
    "",
    uncontendedSection(results.uncontended),
    "",
    handoffPart(results),
    "",
    `## 3. Scaling (distinct names: fencelock; contenders on one name: every library; ${scaling.cellMs / 1000} s per cell)`,
    "",
    scalingSection(results.scaling, scaling.cellMs),
    "",
    "## 4. Bundle size (`npm run size`, and the peers bundled the same way: esbuild, minified, gzip -9)",
    "",
    sizeSection(results.size),
    "",
    ...(results.quorum ? ["## 5. Quorum mode (issue 25): fencelock over N = 3 and 5 nodes, fencelock on one node, redlock over TCP", "", quorumSection(results.quorum), ""] : []),
    `## 6. Realistic latency (issue 26): the HTTP libraries through a delay proxy at RTT ${results.plans.latency.rttsMs.join(", ")} ms, new connections charged 2 RTT`,
    "",
    latencySection(results.latency),
    "",
    ...(results.tcp ? ["## 7. Over TCP (issue 27): fencelock through fromIoredis, redis-semaphore, redlock and a raw floor, all over ioredis to one redis-server", "",
      tcpSection(results.tcp), "", "Its targets (issue 27):", "", tcpTargetLines(results.tcp), ""] : []),
    "## Settings of each library",
    "",
    settingsSection(results),
    "",
    "## Targets (issue 26), as measured in this run (sections 1 and 6 judged on their round-by-round middle half, section 2 on all its rounds)",
    "",
    evaluateTargets(results).map((t) => `${check(t.met)} ${t.text} — ${t.detail}`).join("\n"),
    "",
  ].join("\n");
}

function handoffPart(results: BenchResults): string {
  const { handoff } = results.plans;
  const pushNote = results.push.available ? "" : `\n\n> Push wake-ups were not available, so fencelock (default) may have polled: ${results.push.reason}`;
  return [
    `## 2. Contended handoff (${handoff.clients} clients, one name, hold ${handoff.holdMs} ms, ${handoff.durationMs / 1000} s per library and table, in ${handoff.rounds} round${handoff.rounds === 1 ? "" : "s"} of random order, with a GC before each run)`,
    "",
    "A gap runs from the holder calling `release()` to the next holder's `acquire()` resolving. \"To a waiter\": only where the",
    "next holder is another client that was already waiting when the release began. \"Waiting requests / s\": per client,",
    "requests sent inside `acquire()` beyond each call's first attempt ÷ seconds spent inside `acquire()` (mean and busiest",
    "client). \"Longest ÷ mean\": the longest single wait of any client (cut-off waits at the end included) ÷ the mean wait.",
    "Waits count up to the window's end only: libraries that take no AbortSignal (@upstash/lock; redlock between its",
    "batches) go on waiting after it, and their requests in such a wait are counted in proportion. Each round is a window",
    `of its own, so no wait lasts longer than a round (${handoff.durationMs / handoff.rounds / 1000} s), and longest ÷ mean is at most that ÷ the mean wait.`,
    "\"Most overtaken\": the most clients that called `acquire()` after a waiter and held the lock before it, in any one wait",
    "(0 in a strict line, however long the line; calls that cross on their way to Redis count too).",
    "",
    "### 2a. The releaser competes again at once",
    "",
    handoffSection(results.handoff.immediate, "next") + pushNote,
    "",
    "### 2b. The releaser rejoins once another client holds the lock, then a random 0–100 ms later (so it never takes the lock straight back; the delay keeps fixed-interval pollers out of step, as real arrivals are, and now and then nobody is waiting at a release)",
    "",
    handoffSection(results.handoff.toWaiter, "waiter") + pushNote,
    "",
    "![handoff gap CDF per library](handoff.svg)",
  ].join("\n");
}

function method(results: BenchResults): string {
  return [
    "How: a `redis-server` and the local Upstash-compatible server (`fencelock/local`, in a child process) on loopback, a fresh pair for each section.",
    "HTTP clients (fencelock, @upstash/lock, the raw floor) use `@upstash/redis` against the local server; redlock and",
    "redis-semaphore use ioredis over TCP to the same Redis, so their numbers skip the HTTP hop and are not like for like.",
    "Each simulated client has its own `@upstash/redis` instance or ioredis connection, as separate isolates would",
    "(@upstash/redis auto-pipelines concurrent commands of one instance into one HTTP request). Requests are counted at the",
    "transport: every `fetch` @upstash/redis makes (SSE subscriptions included) and every command ioredis sends; Redis",
    "commands come from `INFO commandstats` deltas. Redis µs per cycle: over a separate untimed run of 200 sequential",
    "cycles per library, each command the client sent (named at the transport) at its mean execution time from",
    "`INFO commandstats`; a script's time includes the commands it calls. Network, parsing and the HTTP server are not in it.",
    "Throughput times are performance.now() in the one benchmark process.",
    `Push wake-ups available (a \`wake: "push"\` acquire and an SSE round trip through the local server): ${results.push.available ? "yes" : "no"}.`,
    "fencelock (default) passes no `wake` option; fencelock (poll) passes `wake: \"poll\"`.",
  ].join("\n");
}

/** `npm run bench -- --only latency`: section 6 and the targets judged on it. */
export function renderLatencyAlone(latency: LatencyResults, env: Environment): string {
  return [
    "# fencelock benchmark: realistic latency (section 6 alone)",
    "",
    `- Date: ${env.date}; commit ${env.commit}; section ${latency.seconds} s; Node ${env.node}, Redis ${env.redis}`,
    "",
    latencySection(latency),
    "",
    "## Targets judged on this section",
    "",
    [...latencyTargets(latency), connectionsTarget(latency)].map((t) => `${check(t.met)} ${t.text} — ${t.detail}`).join("\n"),
    "",
  ].join("\n");
}
