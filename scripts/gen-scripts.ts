// Writes src/redis/scripts.gen.ts from lua/*.lua: each script's name and (shortened) text.
// `node scripts/gen-scripts.ts --check` exits 1 when the generated file is stale.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
export const generatedPath = `${root}src/redis/scripts.gen.ts`;

// Comments, line breaks, indentation, spaces around punctuation and long local names stay
// in lua/ for readers but are not shipped: the text is part of every worker bundle and
// every cold EVAL. `redis.call` is called through a local. Strings ('single-quoted', never
// multi-line) are left alone. Scripts minified with one `letters` map give a local name the
// same letter in each where they can.
export function minifyLua(source: string, letters = new Map<string, string>()): string {
  const lines = source.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("--"));
  // Lua refuses such a line as ambiguous; joined to the line before, it would call its value.
  if (lines.some((line) => line.startsWith("("))) throw new Error("lua/: do not start a line with (");
  const tightened = lines
    .map((line) => line.split(/('[^']*')/).map((part, i) => (i % 2 ? part : tighten(part, i > 0))).join(""))
    .join(" ")
    // Lines joined after `)`, `]`, `}` or a string need no space: a name or keyword there starts a new token.
    .split(/('[^']*')/)
    .map((part, i) => (i % 2 ? part : part.replace(/([)\]}]) (?=[A-Za-z_])/g, "$1").replace(/^ (?=[A-Za-z_])/, "")))
    .join("");
  if (tightened.includes('"')) throw new Error("lua/: quote strings with ' so the minifier can see them");
  // Lines are joined with spaces, so a comment after code would swallow the rest of the script.
  if (tightened.split(/'[^']*'/).some((code) => code.includes("--"))) throw new Error("lua/: put comments on lines of their own");
  return shortenLocals(`local call=redis.call ${tightened.replaceAll("redis.call(", "call(")}`, letters);
}

const LUA_KEYWORDS = new Set([
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
  "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
]);

// An identifier, unless it follows a single "." (a field: redis.call) or a word character.
const IDENTIFIER = /(?<![\w.])[A-Za-z_]\w*|(?<=\.\.)[A-Za-z_]\w*/g;

/**
 * Gives every local variable, local function and parameter a one-letter name. The
 * renaming is one-to-one over the whole script and avoids every name it leaves alone
 * (KEYS, redis, tonumber ...), so scoping is unchanged even where a name is reused. A name
 * already in `letters` (from another script) keeps its letter where it can: the scripts then
 * share more text, which gzip shrinks.
 */
function shortenLocals(code: string, letters: Map<string, string>): string {
  const parts = code.split(/('[^']*')/);
  const outside = parts.filter((_, i) => i % 2 === 0).join("\n");
  const declared = new Set<string>();
  for (const [, fn, params, names] of outside.matchAll(/\blocal function (\w+)\(([\w,]*)\)|\blocal ([\w,]+)/g)) {
    for (const name of [fn, ...(params ?? names ?? "").split(",")]) {
      if (name && !LUA_KEYWORDS.has(name)) declared.add(name);
    }
  }
  const kept = new Set([...outside.matchAll(IDENTIFIER)].map(([id]) => id).filter((id) => !declared.has(id)));
  const free = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"].filter((c) => !kept.has(c));
  if (declared.size > free.length) throw new Error("lua/: more locals than one-letter names");
  const names = new Map<string, string>();
  const used = new Set<string>();
  const unused = (c: string) => !used.has(c);
  for (const name of declared) {
    // Its letter from an earlier script if that is free here; else one no other name has yet.
    const known = letters.get(name);
    const taken = new Set(letters.values());
    const letter = known && free.includes(known) && unused(known)
      ? known
      : (free.find((c) => unused(c) && !taken.has(c)) ?? free.find(unused)!);
    names.set(name, letter);
    used.add(letter);
    if (!known) letters.set(name, letter);
  }
  return parts.map((part, i) => (i % 2 ? part : part.replace(IDENTIFIER, (id) => names.get(id) ?? id))).join("");
}

// ".." after a digit keeps its spaces: "1 .. x" must not become the malformed number "1..x".
// After a string (`afterString`: the code follows a closing quote) it never does.
function tighten(code: string, afterString: boolean): string {
  const tight = code
    .replace(/\s+/g, " ")
    .replace(/ ?([=,(){}<>~+*\/-]) ?/g, "$1")
    .replace(/([^0-9 ]) ?\.\. ?/g, "$1..");
  return afterString ? tight.replace(/^ ?\.\. ?/, "..") : tight;
}

/**
 * How many values the script answers, when every `return {…}` in it has the same count: the
 * client then refuses a reply of any other length (a proxy's or another service's array) rather
 * than reading the values it lacks as zeros. Undefined for a script whose replies vary.
 */
export function replyLength(minified: string): number | undefined {
  const code = minified.split(/'[^']*'/).join("''");
  const counts = new Set<number>();
  for (const match of code.matchAll(/return\{/g)) {
    let depth = 0;
    let count = 1;
    for (const c of code.slice(match.index + "return".length)) {
      if ("({[".includes(c)) depth++;
      else if (")}]".includes(c) && --depth === 0) break;
      else if (c === "," && depth === 1) count++;
    }
    counts.add(count);
  }
  return counts.size === 1 ? [...counts][0] : undefined;
}

function camelCase(file: string): string {
  return file.replace(/\.lua$/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Scripts sent as text, not EVALSHA first: leave runs as a call gives up, often just before its
 * process or connection closes, where the EVAL after a NOSCRIPT might never be sent.
 */
const SENT_AS_TEXT = new Set(["leave.lua"]);

/** Renders the generated module for every script in lua/. */
export function renderScripts(): string {
  const files = readdirSync(`${root}lua`).filter((f) => f.endsWith(".lua")).sort();
  const letters = new Map<string, string>();
  const entries = files.map((file) => {
    const text = minifyLua(readFileSync(`${root}lua/${file}`, "utf8"), letters);
    const length = replyLength(text);
    return `export const ${camelCase(file)}: LuaScript = {\n  name: ${JSON.stringify(file.replace(/\.lua$/, ""))},\n` +
      `${length === undefined ? "" : `  replyLength: ${length},\n`}${SENT_AS_TEXT.has(file) ? "  asText: true,\n" : ""}` +
      `  text: ${JSON.stringify(text)},\n};\n`;
  });
  return [
    "// GENERATED by `npm run gen` from lua/*.lua. Do not edit by hand.",
    "",
    "export interface LuaScript {",
    "  readonly name: string;",
    "  /** Every reply has this many values (scripts whose replies vary have none). */",
    "  readonly replyLength?: number;",
    "  /** Sent by EVAL, never EVALSHA first (see scripts/gen-scripts.ts). */",
    "  readonly asText?: true;",
    "  readonly text: string;",
    "}",
    "",
    ...entries,
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rendered = renderScripts();
  if (process.argv.includes("--check")) {
    const current = readFileSync(generatedPath, "utf8");
    if (current !== rendered) {
      console.error("src/redis/scripts.gen.ts is stale: run `npm run gen`.");
      process.exit(1);
    }
  } else {
    writeFileSync(generatedPath, rendered);
    console.log(`wrote ${generatedPath}`);
  }
}
