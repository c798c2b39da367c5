// Run first by `npm test`: the tests start their own redis-server processes, so one must exist.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { INSTALL_HINT } from "../src/local/errors.ts";
import { findRedisServerBinary } from "../src/local/redis-binary.ts";

function report(binary: string): void {
  const version = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
  console.log(`ensure-redis: ${binary}: ${version}`);
}

const APT_GET = "/usr/bin/apt-get";

function canAptInstall(): boolean {
  return existsSync(APT_GET) && existsSync("/etc/debian_version") && process.getuid?.() === 0;
}

function aptInstall(): void {
  // apt-get runs dpkg and maintainer scripts, which need the system directories on PATH.
  const PATH = `${process.env.PATH}:/usr/sbin:/usr/bin:/sbin:/bin`;
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive", PATH };
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "--no-install-recommends", "redis-server"]]) {
    console.log(`ensure-redis: apt-get ${args.join(" ")}`);
    execFileSync(APT_GET, args, { stdio: ["ignore", "ignore", "inherit"], env });
  }
}

const found = findRedisServerBinary();
if (found) {
  report(found);
} else if (process.env.REDIS_SERVER_BIN) {
  console.error(`ensure-redis: REDIS_SERVER_BIN=${process.env.REDIS_SERVER_BIN} is not an executable file.`);
  process.exit(1);
} else if (canAptInstall()) {
  console.log("ensure-redis: redis-server is not on PATH; installing the Debian package");
  aptInstall();
  const installed = findRedisServerBinary();
  if (!installed) {
    console.error(`ensure-redis: apt-get finished but redis-server is still not on PATH. ${INSTALL_HINT}`);
    process.exit(1);
  }
  report(installed);
} else {
  console.error(`ensure-redis: redis-server is not on PATH (tests start their own instances). ${INSTALL_HINT}`);
  process.exit(1);
}
