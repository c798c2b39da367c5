// A real Redis Cluster on loopback for tests: cluster-enabled redis-servers, slots split evenly.
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startRedisServer, type RedisServer } from "../../src/local/index.ts";
import { until } from "./until.ts";

export interface ClusterNode {
  readonly server: RedisServer;
  readonly port: number;
  /** The node's cluster id. */
  readonly id: string;
  /** An ioredis client on this node alone, for CLUSTER commands. */
  readonly admin: Redis;
}

export interface RedisCluster {
  readonly masters: readonly ClusterNode[];
  /** One replica per master when asked for, in the same order. */
  readonly replicas: readonly ClusterNode[];
  /** Host and port of every master: what Cluster clients take as their start nodes. */
  readonly startNodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

const SLOTS = 16384;

async function startNode(args: readonly string[] = []): Promise<ClusterNode> {
  const file = `fencelock-cluster-${process.pid}-${Math.random().toString(36).slice(2)}.conf`;
  const server = await startRedisServer({ args: ["--cluster-enabled", "yes", "--cluster-config-file", file, "--cluster-node-timeout", "2000", ...args] });
  const stop = server.stop;
  server.stop = () => stop().finally(() => rmSync(join(tmpdir(), file), { force: true }));
  const admin = new Redis({ port: server.port, lazyConnect: false });
  admin.on("error", () => {});
  const id = String(await admin.call("CLUSTER", "MYID"));
  return { server, port: server.port, id, admin };
}

/**
 * Starts `masters` masters (and a replica of each when `replicas` is true), each with `args` added,
 * and waits for cluster_state:ok everywhere.
 */
export async function startRedisCluster({ masters = 3, replicas = false, args = [] as readonly string[] } = {}): Promise<RedisCluster> {
  const primaries = await Promise.all(Array.from({ length: masters }, () => startNode(args)));
  const followers = replicas ? await Promise.all(primaries.map(() => startNode(args))) : [];
  const all = [...primaries, ...followers];
  const cluster: RedisCluster = {
    masters: primaries,
    replicas: followers,
    startNodes: primaries.map(({ port }) => ({ host: "127.0.0.1", port })),
    async stop() {
      for (const node of all) node.admin.disconnect();
      await Promise.all(all.map((node) => node.server.stop()));
    },
  };
  try {
    await Promise.all(primaries.map(({ admin }, i) =>
      admin.call("CLUSTER", "ADDSLOTSRANGE", Math.floor((SLOTS * i) / masters), Math.floor((SLOTS * (i + 1)) / masters) - 1)));
    for (const node of all.slice(1)) await node.admin.call("CLUSTER", "MEET", "127.0.0.1", primaries[0]!.port);
    await until(async () => (await Promise.all(all.map(knowsEveryNode(all.length)))).every(Boolean), 20_000);
    await Promise.all(followers.map((node, i) => node.admin.call("CLUSTER", "REPLICATE", primaries[i]!.id)));
    await until(async () => (await Promise.all(all.map(clusterOk))).every(Boolean), 20_000);
    // A replica that has not synced yet refuses to take over from a master that fails.
    await until(async () => (await Promise.all(followers.map(synced))).every(Boolean), 20_000);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

function knowsEveryNode(count: number) {
  return async ({ admin }: ClusterNode) => String(await admin.call("CLUSTER", "NODES")).trim().split("\n").length === count;
}

async function synced({ admin }: ClusterNode): Promise<boolean> {
  return /master_link_status:up/.test(String(await admin.info("replication")));
}

async function clusterOk({ admin }: ClusterNode): Promise<boolean> {
  return /cluster_state:ok/.test(String(await admin.call("CLUSTER", "INFO")));
}
