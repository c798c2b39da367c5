// sql`...`: literal SQL expressions for fenced writes, their values always bound, never spliced.
import { LockConfigError } from "../../core/errors.ts";

/** A value sent as a bound statement parameter; never spliced into SQL text. */
export type SqlValue = string | number | boolean | null;

declare const brand: unique symbol;

/** SQL text written in the source as sql`...`: the only way to put an expression into a fenced statement. */
export interface SqlExpression {
  readonly [brand]: "SqlExpression";
}

interface Template {
  strings: readonly string[];
  values: readonly SqlValue[];
}

// Only sql`...` can fill this map, so holding an SqlExpression proves its text came from a template literal.
const templates = new WeakMap<object, Template>();

/**
 * Marks literal SQL text as an expression for `set` or `where`. Interpolated `${values}`
 * become bound parameters, never text; Postgres types each by where it stands, so one with
 * nothing to type it by needs a cast: sql`${a}::int + ${b}::int`. The text must stand alone as
 * one expression (no `;`, comments, placeholders, backslashes or unbalanced parentheses), so it
 * can never switch off the fence guard.
 *
 * @example
 * set: { remaining: sql`remaining - ${quantity}` }, where: sql`remaining >= ${quantity}`
 */
export function sql(strings: TemplateStringsArray, ...values: SqlValue[]): SqlExpression {
  // A frozen array with `raw` is what the engine passes a tag; sql(["..."]) from a built string is not.
  if (!Array.isArray(strings) || !Array.isArray(strings.raw) || !Object.isFrozen(strings)) {
    throw new LockConfigError("sql expression", ["use sql as a template tag: sql`remaining - 1`"]);
  }
  values.forEach((value) => checkValue(value, "sql expression value"));
  const problem = findProblem(strings);
  if (problem !== null) throw new LockConfigError("sql expression", [`${problem} in sql\`${strings.join("${...}")}\``]);
  const expression = Object.freeze({}) as SqlExpression;
  templates.set(expression, { strings: [...strings], values: [...values] });
  return expression;
}

export function isSqlExpression(value: unknown): value is SqlExpression {
  return typeof value === "object" && value !== null && templates.has(value);
}

/** The expression's text with each interpolated value replaced by whatever `bind` returns for it. */
export function renderExpression(expression: SqlExpression, bind: (value: SqlValue) => string): string {
  const template = templates.get(expression);
  if (template === undefined) throw new LockConfigError("sql expression", ["expected a value made by sql`...`"]);
  return template.strings.reduce((text, piece, i) => text + bind(template.values[i - 1] ?? null) + piece);
}

/** Throws LockConfigError unless `value` can be bound as a parameter by D1 and Postgres drivers alike. */
export function checkValue(value: unknown, what: string): SqlValue {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  throw new LockConfigError(what, [`expected a string, finite number, boolean or null, got ${described(value)}`]);
}

/**
 * A bad value as an error message shows it. Not String() alone: it throws on an object without
 * a prototype (querystring.parse makes those) and JSON.stringify on a BigInt, and the caller would
 * get that TypeError instead of the LockConfigError saying what to fix.
 */
export function described(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "object" && value !== null) return Array.isArray(value) ? "an array" : "an object";
  return typeof value === "function" ? "a function" : String(value);
}

// Not `[`: SQLite reads it as a quote, Postgres as a subscript, and the scan must never
// think it is inside quotes where the database thinks it is not; so it is refused.
const QUOTES = "'\"`";
const WORD = /[\w$\u0080-\uffff]/;

// Positional placeholders are refused because one inside an expression would shift every
// later parameter, fence included; named ones (:a @a $a #a) take positions in SQLite too.
function findProblem(strings: readonly string[]): string | null {
  let closing: string | null = null;
  let depth = 0;
  for (const [index, text] of strings.entries()) {
    if (index > 0 && closing !== null) return "an interpolated value inside quotes would not be bound";
    // `${v}1` renders as ?1 (SQLite's numbered parameter) or $31, and `x${v}` as Postgres' name x$1.
    if (index > 0 && (WORD.test(text[0] ?? "") || WORD.test(strings[index - 1]?.at(-1) ?? ""))) {
      return "an interpolated value touching a name or number (`${value}1` renders as ?1, another parameter)";
    }
    for (let i = 0; i < text.length; i++) {
      const c = text[i] ?? "";
      const pair = text.slice(i, i + 2);
      if (c === "\\") return "a backslash (Postgres E'' escapes make quotes ambiguous)";
      if (closing !== null) {
        if (c === closing) closing = null;
      } else if (QUOTES.includes(c)) closing = c;
      else if (pair === "::") i++; // a Postgres cast, not a named parameter
      else if (c === ";") return "a `;` would end the statement";
      else if (c === "[" || c === "]") return "a `[` or `]` (a quote to SQLite, a subscript to Postgres) cannot be scanned safely";
      else if (pair === "--" || pair === "/*") return "a comment could hide the rest of the statement";
      // SQLite also reads @name, #name and #::name as parameters (any character above U+007F can be
      // part of a name); a lone # (Postgres XOR) or Postgres' @>, <@ and @@ are none.
      else if ("?$:".includes(c) || ("#@".includes(c) && /[\w$:\u0080-\uffff]/.test(text[i + 1] ?? ""))) {
        return `a \`${c}\` placeholder would misnumber the parameters (interpolate \${value} instead)`;
      }
      else if (c === "(") depth++;
      else if (c === ")" && --depth < 0) return "a `)` closes a parenthesis the expression did not open";
    }
  }
  if (closing !== null) return "an unterminated quote";
  if (depth !== 0) return "an unclosed `(`";
  if (strings.length === 1 && strings[0]?.trim() === "") return "an empty expression";
  return null;
}
