import { Redis } from "ioredis";
import { lockKeys } from "../lock-keys.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import type { Held } from "./history.ts";
import type { RedisProcess } from "./redis-process.ts";
import type { ProxiedEndpoint, Rig } from "./rig.ts";

const SYNC_WITHIN_MS = 15_000;
/**
 * How long the cut replica sleeps (DEBUG SLEEP) so it cannot reconnect to its primary: past the
 * lost holders' acquires (at most 1.5 s) and the kill. Were the kill later on a slow box, the
 * replica would get some of the writes: fewer would be lost, nothing would fail.
 */
const CUT_SLEEP_MS = 3_000;

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(\\S+)`, "m").exec(info)?.[1];
}

/** Waits until `replica` is linked to its primary and has applied all the primary has written so far. */
export async function waitInSync(primary: RedisProcess, replica: RedisProcess): Promise<void> {
  const target = Number(field(await primary.admin.info("replication"), "master_repl_offset"));
  const started = performance.now();
  while (performance.now() - started < SYNC_WITHIN_MS) {
    const info = await replica.admin.info("replication");
    if (field(info, "master_link_status") === "up" && Number(field(info, "slave_repl_offset")) >= target) return;
    await sleep(50);
  }
  throw new Error(`${replica.label} did not catch up with ${primary.label} within ${SYNC_WITHIN_MS} ms`);
}

/**
 * Cuts a replica's link (CLIENT KILL TYPE master) and keeps it from reconnecting (DEBUG SLEEP, in
 * the same write so nothing runs between), and resolves once the primary has seen the replica go:
 * what it writes from then on is not replicated. `sleeping` settles when the sleep ends.
 */
export async function cutLink(primary: RedisProcess, replica: RedisProcess): Promise<{ sleeping: Promise<unknown> }> {
  const connection = new Redis(replica.port, "127.0.0.1", { maxRetriesPerRequest: 0 });
  connection.on("error", () => {});
  const sleeping = connection.pipeline().client("KILL", "TYPE", "master").call("DEBUG", "SLEEP", String(CUT_SLEEP_MS / 1000))
    .exec().catch(() => undefined).finally(() => connection.disconnect());
  const started = performance.now();
  while (field(await primary.admin.info("replication"), "connected_slaves") !== "0") {
    if (performance.now() - started > SYNC_WITHIN_MS) throw new Error(`${primary.label} still sees ${replica.label} after the cut`);
    await sleep(10);
  }
  return { sleeping };
}

export interface LosingFailover {
  from: RedisProcess;
  to: RedisProcess;
  endpoint: ProxiedEndpoint;
  /** From the kill to the promotion; the failover gap (from the last fence lost) is at least this. */
  gapMs: number;
  /** The lost holders' leaseMs: long, so they still hold their leases locally when they write. */
  stragglerLeaseMs: number;
  /** Which of rig.stragglerNames' rounds the lost holders take. */
  round?: number;
  /**
   * Names the workload leaves alone while writes are being lost: a later round's, so that a
   * write lost here, above what the new primary mints, does not make the store refuse
   * everything on them (and so hide that round's verdicts) until the new fences pass it.
   */
  spare?: string[];
}

/** How many of `held` the new primary has no record of: its last fence for the name is below theirs. */
async function lostOn(server: RedisProcess, prefix: string, held: Held[]): Promise<number> {
  const lasts = await Promise.all(held.map((h) => server.admin.hget(lockKeys(prefix, h.name).fence, "last")));
  return held.filter((h, i) => Number(lasts[i] ?? 0) < h.fence).length;
}

/**
 * A failover that loses the last writes, as Sentinel's or a managed service's can: the replica's
 * link is cut, lost holders take locks on the old primary, the old primary is SIGKILLed and the
 * address points at nothing for the gap, then the replica is promoted and the address switched to
 * it. Returns when the kill happened (performance.now()) and how many lost holders' fences were lost.
 */
export async function failOverLosingWrites(rig: Rig, plan: LosingFailover): Promise<{ killedAt: number; lostHolders: string }> {
  const { from, to, endpoint, gapMs } = plan;
  await waitInSync(from, to);
  rig.workload.spare(plan.spare ?? []);
  const { sleeping } = await cutLink(from, to);
  rig.history.note(`cut ${to.label}'s link to ${from.label}`);
  const bound = gapMs + rig.form.stragglerBoundMs;
  const lost = await rig.workload.straggle(endpoint, rig.stragglerNames(plan.round), plan.stragglerLeaseMs, bound);
  await sleep(300); // more of the workload's writes to lose
  endpoint.proxy.switchTo(null);
  const killedAt = rig.history.note(`SIGKILL ${from.label} (${lost.length} lost holders on it)`);
  await from.kill();
  rig.workload.unspare();
  await Promise.all([sleeping, sleep(gapMs - (performance.now() - killedAt))]);
  await to.admin.replicaof("NO", "ONE");
  // Checked before anyone can mint there: a fence the new primary knows of was not lost after all.
  const lostHolders = await lostOn(to, rig.prefix, lost);
  endpoint.proxy.switchTo(to);
  rig.history.note(`promoted ${to.label} ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
  return { killedAt, lostHolders: `${lostHolders} of ${lost.length} lost holders' fences lost` };
}
