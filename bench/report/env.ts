import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, platform, release } from "node:os";
import { fileURLToPath } from "node:url";

export interface Environment {
  date: string;
  node: string;
  platform: string;
  cpus: number;
  cpuModel: string;
  redis: string;
  commit: string;
  /** Versions of the libraries compared, as installed. */
  packages: Record<string, string>;
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const PACKAGES = ["@upstash/redis", "@upstash/lock", "redlock", "redis-semaphore", "ioredis", "vega", "vega-lite"];

export function environment(redisVersion: string): Environment {
  const cpuList = cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${platform()} ${release()}`,
    cpus: cpuList.length,
    cpuModel: cpuList[0]?.model.trim() ?? "unknown",
    redis: redisVersion,
    commit: gitCommit(),
    packages: Object.fromEntries(PACKAGES.map((name) => [name, installedVersion(name)])),
  };
}

function installedVersion(name: string): string {
  try {
    const text = readFileSync(`${root}node_modules/${name}/package.json`, "utf8");
    return String((JSON.parse(text) as { version?: unknown }).version ?? "unknown");
  } catch {
    return "not installed";
  }
}

function gitCommit(): string {
  try {
    const run = (args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    // Not the results of an earlier run, which every run after it would otherwise count as changes.
    const changes = run(["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results"]);
    const dirty = changes === "" ? "" : " (with uncommitted changes)";
    return `${run(["rev-parse", "--short", "HEAD"])}${dirty}`;
  } catch {
    return "unknown";
  }
}
