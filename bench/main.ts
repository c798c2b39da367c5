// npm run bench: fencelock side by side with @upstash/lock, a raw SET NX floor, redlock and
// redis-semaphore, each section against a local Redis and local Upstash-compatible server of its
// own; the HTTP libraries again through a delay proxy at realistic round trips (section 6), every
// library over TCP (section 7), then quorum mode over 3 and 5 nodes (section 5).
// BENCH_QUICK=1 shortens every cell (for checking the harness, not for numbers).
// `npm run bench -- --only quorum` (or BENCH_ONLY=quorum) runs section 5 alone and writes only
// bench/results/quorum.{md,json}, leaving latest.* as the last full run left them; `--only latency`
// runs section 6 alone and only prints it; `--only tcp` runs section 7 (issue 27) alone and writes
// only bench/results/tcp.{md,json}.
import { mkdir, rename, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { fencelockLibrary } from "./adapters/fencelock.ts";
import { fencelockScriptsLibrary } from "./adapters/fencelock-scripts.ts";
import { probePush } from "./adapters/push-probe.ts";
import { rawFloorLibrary } from "./adapters/raw-floor.ts";
import { redisSemaphoreLibrary } from "./adapters/redis-semaphore.ts";
import { redlockLibrary } from "./adapters/redlock.ts";
import { upstashLockLibrary } from "./adapters/upstash-lock.ts";
import { RedisStats } from "./harness/commandstats.ts";
import { installFetchCounter } from "./harness/requests.ts";
import { startServerProcess, type Endpoint } from "./harness/server.ts";
import { now, progress } from "./harness/timing.ts";
import { handoffChart } from "./report/chart.ts";
import { environment } from "./report/env.ts";
import { renderLatencyAlone, renderMarkdown } from "./report/markdown.ts";
import { renderQuorumMarkdown } from "./report/quorum.ts";
import { renderTcpMarkdown } from "./report/tcp.ts";
import type { BenchResults } from "./report/results.ts";
import { runHandoff } from "./scenarios/handoff.ts";
import { runLatency, type LibraryAt } from "./scenarios/latency.ts";
import { runQuorum, type QuorumResults } from "./scenarios/quorum.ts";
import { runRequestFloor } from "./scenarios/request-floor.ts";
import { runScaling } from "./scenarios/scaling.ts";
import { runSize } from "./scenarios/size.ts";
import { runTcp, type TcpResults } from "./scenarios/tcp.ts";
import { runUncontended } from "./scenarios/uncontended.ts";
import { HANDOFF_WARM_MS, plans, quorumPlan, tcpPlan, UNCONTENDED_WARM } from "./plans.ts";

const only = onlySection();
/**
 * The commit the code under test was loaded from: read when the run starts, not when it ends, since
 * others may commit in this tree while a run is under way (a quorum run once reported a commit that
 * landed after it started, and measured the code before it).
 */
const loadedFrom = environment("unknown").commit;
/** Section 6: the HTTP libraries that wait, each made for the delay proxy's endpoint. */
const latencyLibraries: LibraryAt[] = [(at) => fencelockLibrary(at, "default"), (at) => fencelockLibrary(at, "poll"), upstashLockLibrary];
const resultsDir = fileURLToPath(new URL("./results/", import.meta.url));

/** Sections 1, 2 (with the request floor), 3, 6 and 7, each on a server pair of its own (see onFreshServer). */
async function measure(started: number): Promise<BenchResults> {
  const { push, uncontended, redis } = await onFreshServer(async (server, stats) => {
    const probed = await probePush(server);
    progress(probed.available ? "push wake-ups: available" : `push wake-ups: NOT available (${probed.reason}); fencelock (default) may poll`);
    return { push: probed, uncontended: await measureUncontended(server, stats), redis: await stats.version() };
  });
  const { handoff, requestFloor } = await onFreshServer(measureHandoff);
  const scaling = await onFreshServer(async (server, stats) => {
    const { fencelocks, contenders } = librariesAt(server);
    const cells = await runScaling(fencelocks, contenders, plans.scaling, stats);
    await stats.flush();
    return cells;
  });
  const latency = await onFreshServer((server, stats) => runLatency(latencyLibraries, server, plans.latency, stats));
  const tcp = await onFreshServer((server, stats) => runTcp(server, stats, tcpPlan));
  const size = await runSize();
  // The ids, labels and settings only, which do not depend on the endpoint.
  const { fencelocks, upstash, floor, tcp: tcpPeers } = librariesAt({ url: "", token: "", redisUrl: "" });
  const libraries = [...fencelocks, upstash, floor, ...tcpPeers].map(({ id, label, transport, settings }) => ({ id, label, transport, settings }));
  return {
    environment: { ...environment(redis), commit: loadedFrom }, plans, libraries, push, uncontended, handoff, requestFloor, scaling, size, latency, tcp,
    runSeconds: Math.round((now() - started) / 100) / 10,
  };
}

/** Every library of sections 1-3, made for one endpoint. */
function librariesAt(at: Endpoint) {
  // wake: "push" is left out: with push available it waits as the default does.
  const ours = fencelockLibrary(at, "default");
  const fencelocks = [ours, fencelockLibrary(at, "poll")];
  const upstash = upstashLockLibrary(at);
  const tcp = [redlockLibrary(at), redisSemaphoreLibrary(at)];
  return { ours, fencelocks, upstash, floor: rawFloorLibrary(at), tcp, contenders: [...fencelocks, upstash, ...tcp] };
}

/** Section 1, after an untimed pass. */
async function measureUncontended(server: Endpoint, stats: RedisStats) {
  const { ours, upstash, floor, tcp } = librariesAt(server);
  // fencelock's scripts without the library: the floor target's yardstick for the client's share.
  const libraries = [ours, upstash, floor, fencelockScriptsLibrary(server), ...tcp];
  progress("uncontended: an untimed warm-up pass");
  await runUncontended(libraries, { ...plans.uncontended, ...UNCONTENDED_WARM }, stats);
  const rows = await runUncontended(libraries, plans.uncontended, stats);
  await stats.flush();
  return rows;
}

/** Section 2, and the PINGs its handoffs are read against. */
async function measureHandoff(server: Endpoint, stats: RedisStats) {
  const { contenders } = librariesAt(server);
  // Untimed: the first contended run in a process was 1.5-2x slower than the same library's
  // later runs (JIT, the server's subscribe path), and push always came first in 2a.
  progress(`handoff: an untimed warm-up of ${HANDOFF_WARM_MS} ms per library`);
  await runHandoff(contenders, { ...plans.handoff, durationMs: HANDOFF_WARM_MS, rounds: 1 }, "immediate", stats);
  const handoff = {
    immediate: await runHandoff(contenders, plans.handoff, "immediate", stats),
    toWaiter: await runHandoff(contenders, plans.handoff, "after-handoff", stats),
  };
  await stats.flush();
  progress(`request floor: ${plans.requestFloor.samples} PINGs after a ${plans.requestFloor.pauseMs} ms pause, each followed by one more`);
  return { handoff, requestFloor: await runRequestFloor(server, plans.requestFloor) };
}

async function write(name: string, text: string): Promise<void> {
  const path = `${resultsDir}${name}`;
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

/** `--only quorum`, `--only=quorum` or BENCH_ONLY=quorum: section 5 alone; `latency`: section 6 alone; `tcp`: section 7 alone. */
function onlySection(): "quorum" | "latency" | "tcp" | undefined {
  const args = process.argv.slice(2);
  const at = args.indexOf("--only");
  const value = at >= 0 ? args[at + 1] : args.find((a) => a.startsWith("--only="))?.slice("--only=".length) ?? process.env.BENCH_ONLY;
  if (value === undefined || value === "") return undefined;
  if (value !== "quorum" && value !== "latency" && value !== "tcp") throw new Error(`--only: only "quorum", "latency" or "tcp" runs alone (got "${value}")`);
  return value;
}

async function writeQuorum(quorum: QuorumResults, env: BenchResults["environment"]): Promise<string> {
  const markdown = renderQuorumMarkdown(quorum, env);
  await mkdir(resultsDir, { recursive: true });
  await write("quorum.json", `${JSON.stringify({ environment: env, ...quorum }, null, 2)}\n`);
  await write("quorum.md", markdown);
  return markdown;
}

async function writeTcp(tcp: TcpResults, env: BenchResults["environment"]): Promise<string> {
  const markdown = renderTcpMarkdown(tcp, env);
  await mkdir(resultsDir, { recursive: true });
  await write("tcp.json", `${JSON.stringify({ environment: env, ...tcp }, null, 2)}\n`);
  await write("tcp.md", markdown);
  return markdown;
}

/**
 * Runs a section on a local server and redis-server of its own, so that none inherits what the one
 * before left: section 3 leaves ~50,000 keys that expire over the next minute, and on that pair a 2b
 * handoff at RTT 0 took up to half as long again next to a PING as on a fresh one.
 */
async function onFreshServer<T>(section: (server: Endpoint, stats: RedisStats) => Promise<T>): Promise<T> {
  const server = await startServerProcess();
  const stats = new RedisStats(server.redisUrl);
  try {
    return await section(server, stats);
  } finally {
    await stats.close();
    await server.close();
  }
}

/** Section 7 alone, writing tcp.* only. */
async function tcpAlone(): Promise<void> {
  await onFreshServer(async (server, stats) => {
    const tcp = await runTcp(server, stats, tcpPlan);
    process.stdout.write(await writeTcp(tcp, { ...environment(await stats.version()), commit: loadedFrom }));
    progress(`done in ${tcp.seconds} s; wrote bench/results/tcp.{json,md} (latest.* untouched)`);
  });
}

async function report(results: BenchResults): Promise<void> {
  const markdown = renderMarkdown(results);
  const subtitle = `${results.plans.handoff.clients} clients, one name, hold ${results.plans.handoff.holdMs} ms; ` +
    `Node ${results.environment.node}, Redis ${results.environment.redis}, ${results.environment.date.slice(0, 10)}`;
  await mkdir(resultsDir, { recursive: true });
  await write("latest.json", `${JSON.stringify(results, null, 2)}\n`);
  await write("latest.md", markdown);
  await write("handoff.svg", await handoffChart(results.handoff.toWaiter, results.handoff.immediate, subtitle));
  if (results.quorum) await writeQuorum(results.quorum, results.environment);
  if (results.tcp) await writeTcp(results.tcp, results.environment);
  process.stdout.write(markdown);
}

/** Section 6 and its targets, printed; nothing written, so latest.* stays as the last full run left it. */
async function latencyAlone(): Promise<void> {
  await onFreshServer(async (server, stats) => {
    const latency = await runLatency(latencyLibraries, server, plans.latency, stats);
    process.stdout.write(renderLatencyAlone(latency, { ...environment(await stats.version()), commit: loadedFrom }));
    progress(`done in ${latency.seconds} s; nothing written`);
  });
}

async function main(): Promise<void> {
  const started = now();
  const restoreFetch = installFetchCounter();
  try {
    if (only === "quorum") {
      const quorum = await runQuorum(quorumPlan);
      process.stdout.write(await writeQuorum(quorum, { ...environment(quorum.redis), commit: loadedFrom }));
      progress(`done in ${quorum.seconds} s; wrote bench/results/quorum.{json,md} (latest.* untouched)`);
      return;
    }
    if (only === "latency") return await latencyAlone();
    if (only === "tcp") return await tcpAlone();
    const results = await measure(started);
    // Its own nodes.
    results.quorum = await runQuorum(quorumPlan);
    results.runSeconds = Math.round((now() - started) / 100) / 10;
    await report(results);
    progress(`done in ${results.runSeconds} s; wrote bench/results/latest.{json,md}, quorum.{json,md}, tcp.{json,md} and handoff.svg`);
  } finally {
    restoreFetch();
  }
}

await main();
