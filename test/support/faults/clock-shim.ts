import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync, existsSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const SOURCE = new URL("./clock-shim.c", import.meta.url).pathname;
const COMPILERS = [process.env.CC, "cc", "gcc", "clang"].filter((name): name is string => Boolean(name));

let built: Promise<string | null> | undefined;

/**
 * Builds clock-shim.so once per process, or reuses the one built from the same source before (its
 * name carries the source's hash, so runs leave one file in the temp dir); null (clock scenarios
 * skip) when no C compiler works.
 */
export function clockShim(): Promise<string | null> {
  built ??= Promise.resolve().then(() => {
    const hash = createHash("sha1").update(readFileSync(SOURCE)).digest("hex").slice(0, 12);
    const output = join(tmpdir(), `fencelock-clock-shim-${hash}.so`);
    if (existsSync(output)) return output;
    const building = `${output}.${process.pid}.tmp`;
    for (const compiler of COMPILERS) {
      try {
        execFileSync(compiler, ["-O2", "-shared", "-fPIC", "-o", building, SOURCE], { stdio: "pipe" });
        renameSync(building, output); // whole, for another process that looks at once
        return output;
      } catch {
        // not installed, or failed: try the next one
      }
    }
    return null;
  });
  return built;
}

export const NO_COMPILER = "skipped: no working C compiler (cc, gcc, clang or $CC) to build the clock shim";

/**
 * The file a shimmed redis-server maps its clock offset from. Never truncated (the mapping would
 * fault past its end): each change overwrites the two copies in place, the first one first.
 */
export class ClockOffsetFile {
  readonly path: string;
  #offsetMs = 0;

  constructor(offsetMs = 0) {
    this.path = join(mkdtempSync(join(tmpdir(), "fencelock-clock-")), "offset");
    writeFileSync(this.path, Buffer.alloc(4096));
    this.set(offsetMs);
  }

  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** Deletes the file; a server still mapping it keeps reading the last offset. */
  remove(): void {
    rmSync(dirname(this.path), { recursive: true, force: true });
  }

  /** Shifts the clock of every process mapping this file to `offsetMs` from true time, at once. */
  set(offsetMs: number): void {
    const value = Buffer.alloc(8);
    value.writeBigInt64LE(BigInt(Math.round(offsetMs * 1000)));
    const fd = openSync(this.path, "r+");
    try {
      writeSync(fd, value, 0, 8, 0);
      writeSync(fd, value, 0, 8, 8);
    } finally {
      closeSync(fd);
    }
    this.#offsetMs = offsetMs;
  }
}
