// npm test: every suite, each run even when one before it failed, so one run reports every
// failure; then a line per suite, and a non-zero exit if any failed. Arguments go to vitest.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name: string) => `${root}node_modules/.bin/${name}`;

const suites: [name: string, command: string, args: string[]][] = [
  ["typecheck", bin("tsc"), ["-p", "tsconfig.json", "--noEmit"]],
  ["node and workerd (vitest)", bin("vitest"), ["run", ...process.argv.slice(2)]],
  ["deno", process.execPath, ["scripts/test-deno.ts"]],
];

const results = suites.map(([name, command, args]) => {
  console.log(`\n# npm test: ${name}`);
  const { status, error } = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (error) console.error(`# npm test: ${name} did not start: ${error.message}`);
  return { name, ok: status === 0 };
});
console.log(`\n# npm test: ${results.map(({ name, ok }) => `${name} ${ok ? "passed" : "FAILED"}`).join("; ")}`);
process.exit(results.every(({ ok }) => ok) ? 0 : 1);
