// The text of fenced SQL statements: names checked and quoted, values bound, the fence guard in every one.
import { LockConfigError } from "../../core/errors.ts";
import { checkFence } from "../../core/fence.ts";
import { checkValue, described, isSqlExpression, renderExpression, type SqlExpression, type SqlValue } from "./expression.ts";
import type { FencedClaim, FencedRow, FencedWrite } from "./requests.ts";

/** `?` for SQLite and D1, `$n` for Postgres' `$1, $2, ...`. */
export type Placeholders = "?" | "$n";

/** Statement text and its parameters, in placeholder order, for any driver. */
export interface SqlStatement {
  text: string;
  params: SqlValue[];
}

/** A statement plus what the runner needs to explain a refusal. */
export interface Built {
  statement: SqlStatement;
  /** Counts the key's rows and reads their fence; run only after a refusal, to tell why. */
  report: SqlStatement;
  resource: string;
  fence: number;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const FENCE = '"fence"';

/**
 * Fences as integers whatever a driver binds: SQLite sorts numbers below text, and D1 binds REAL, which a TEXT
 * column rounds. A column that cannot hold them (Postgres' 4-byte REAL) is caught after the write: see ACCEPTED.
 */
const bigint = (value: string) => `CAST(${value} AS BIGINT)`;

/**
 * A row's fence as an integer, NULL as 0, through DOUBLE PRECISION (exact below 2^53): SQLite would cast
 * the TEXT '1.785000002e+15' an older fencelock stored straight to 1.
 */
const stored = (column: string) => bigint(`CAST(COALESCE(${column}, 0) AS DOUBLE PRECISION)`);

// A row back means accepted, not a changed-row count (D1's counts triggers' writes, even for a refused
// upsert). It carries the fence as stored, which must be the one sent (see fenced-sql.ts).
const ACCEPTED = ` RETURNING ${stored(FENCE)} AS ${FENCE}`;

/** Identifiers cannot be bound, so only plain names pass, and they are quoted so keywords work too. */
function identifier(name: unknown, what: string): string {
  if (typeof name !== "string" || !IDENTIFIER.test(name)) {
    throw new LockConfigError(what, [`expected a name matching ${IDENTIFIER}, got ${described(name)}`]);
  }
  return `"${name}"`;
}

function entries(record: unknown, what: string): [string, unknown][] {
  if (typeof record !== "object" || record === null || Array.isArray(record) || isSqlExpression(record)) {
    throw new LockConfigError(what, ["expected an object of column: value"]);
  }
  const list = Object.entries(record);
  if (list.length === 0) throw new LockConfigError(what, ["expected at least one column"]);
  return list;
}

interface Row {
  table: string;
  key: [string, SqlValue][];
  fence: number;
  resource: string;
}

function checkRow(row: FencedRow, what: string): Row {
  const fence = checkFence(row.fence, what);
  const table = identifier(row.table, `${what} table`);
  const key = entries(row.key, `${what} key`).map(([column, value]): [string, SqlValue] => {
    if (value === null) throw new LockConfigError(`${what} key`, [`${column}: NULL never matches a row`]);
    return [identifier(column, `${what} key column`), checkValue(value, `${what} key ${column}`)];
  });
  if (key.some(([column]) => column.toLowerCase() === FENCE)) throw new LockConfigError(`${what} key`, ["fence is not a key"]);
  return { table, key, fence, resource: `${row.table}/${key.map(([, value]) => String(value)).join("/")}` };
}

function checkSet(set: unknown, row: Row, upsert: boolean, what: string): [string, SqlValue | SqlExpression][] {
  return entries(set, `${what} set`).map(([column, value]): [string, SqlValue | SqlExpression] => {
    const quoted = identifier(column, `${what} set column`);
    // SQLite folds identifier case even when quoted, so "Fence" would overwrite the fence too.
    if (quoted.toLowerCase() === FENCE || row.key.some(([k]) => k.toLowerCase() === quoted.toLowerCase())) {
      throw new LockConfigError(`${what} set`, [`${column}: the key and the fence are not set by hand`]);
    }
    if (isSqlExpression(value) && !upsert) return [quoted, value];
    if (isSqlExpression(value)) throw new LockConfigError(`${what} set`, [`${column}: an upsert takes plain values only`]);
    return [quoted, checkValue(value, `${what} set ${column}`)];
  });
}

function binder(placeholders: unknown) {
  if (placeholders !== "?" && placeholders !== "$n") {
    throw new LockConfigError("placeholders", [`expected "?" or "$n", got ${described(placeholders)}`]);
  }
  const params: SqlValue[] = [];
  const bind = (value: SqlValue): string => {
    params.push(value);
    return placeholders === "?" ? "?" : `$${params.length}`;
  };
  return { params, bind };
}

// Pieces are rendered left to right, so `?` parameters are pushed in the order they appear.
function update(row: Row, set: [string, SqlValue | SqlExpression][], where: SqlExpression | undefined, p: Placeholders): SqlStatement {
  const { params, bind } = binder(p);
  const value = (v: SqlValue | SqlExpression) => (isSqlExpression(v) ? `(${renderExpression(v, bind)})` : bind(v));
  const assignments = set.map(([column, v]) => `${column} = ${value(v)}, `).join("");
  // Fenced row by row, a key that matched several rows could write one under a fence another
  // has seen exceeded: such a key writes none (the report says why). A NULL fence counts as 0.
  let text = `UPDATE ${row.table} SET ${assignments}${FENCE} = ${bigint(bind(row.fence))} WHERE ${match(row, bind)}` +
    ` AND ${stored(FENCE)} <= ${bigint(bind(row.fence))} AND (SELECT COUNT(*) FROM ${row.table} WHERE ${match(row, bind)}) = 1`;
  if (where !== undefined) text += ` AND (${renderExpression(where, bind)})`;
  return { text: text + ACCEPTED, params };
}

// INSERT ... ON CONFLICT DO UPDATE ... WHERE: one statement in SQLite >= 3.24 and Postgres >= 9.5.
function upsert(row: Row, set: [string, SqlValue][], p: Placeholders): SqlStatement {
  // There `excluded` names the proposed row: the guard would compare its fence with itself.
  if (row.table.toLowerCase() === '"excluded"') {
    throw new LockConfigError("upsert table", ["a table named excluded cannot be upserted safely"]);
  }
  const { params, bind } = binder(p);
  const columns = [...row.key, ...set];
  const values = [...columns.map(([, v]) => bind(v)), bigint(bind(row.fence))].join(", ");
  const updates = [...set.map(([c]) => c), FENCE].map((c) => `${c} = excluded.${c}`).join(", ");
  const text = `INSERT INTO ${row.table} (${[...columns.map(([c]) => c), FENCE].join(", ")}) VALUES (${values}) ` +
    `ON CONFLICT (${row.key.map(([c]) => c).join(", ")}) DO UPDATE SET ${updates} ` +
    `WHERE ${stored(`${row.table}.${FENCE}`)} <= ${bigint(`excluded.${FENCE}`)}${ACCEPTED}`;
  return { text, params };
}

// Qualified: D1 takes a double-quoted name that is no column for a string, so a misspelled key
// column would compare two strings instead of failing.
function match(row: Row, bind: (value: SqlValue) => string): string {
  return row.key.map(([column, value]) => `${row.table}.${column} = ${bind(value)}`).join(" AND ");
}

function report(row: Row, p: Placeholders): SqlStatement {
  const { params, bind } = binder(p);
  return { text: `SELECT COUNT(*) AS "rows", MAX(${stored(FENCE)}) AS ${FENCE} FROM ${row.table} WHERE ${match(row, bind)}`, params };
}

/** Refuses keys the statement would ignore: a misspelled `where` must not drop the guard. */
export function checkShape(input: unknown, allowed: readonly string[], what: string): void {
  if (typeof input !== "object" || input === null) throw new LockConfigError(what, ["expected an object"]);
  const unknown = Object.keys(input).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw new LockConfigError(what, [`unknown option ${unknown.map((key) => `"${key}"`).join(", ")}`]);
  const { upsert } = input as { upsert?: unknown };
  if (upsert !== undefined && typeof upsert !== "boolean") {
    throw new LockConfigError(what, [`upsert: expected true or false, got ${described(upsert)}`]);
  }
}

export function buildWrite(write: FencedWrite, p: Placeholders): Built {
  checkShape(write, ["table", "key", "fence", "set", "where", "upsert"], "fenced write");
  const row = checkRow(write, "fenced write");
  const isUpsert = write.upsert === true;
  const set = checkSet(write.set, row, isUpsert, "fenced write");
  if (write.where !== undefined && !isSqlExpression(write.where)) {
    throw new LockConfigError("fenced write where", ["expected sql`...`"]);
  }
  if (isUpsert && write.where !== undefined) {
    throw new LockConfigError("fenced write where", ["an upsert takes no guard: a missing row would be inserted regardless"]);
  }
  const statement = isUpsert ? upsert(row, set as [string, SqlValue][], p) : update(row, set, write.where, p);
  return { statement, report: report(row, p), resource: row.resource, fence: row.fence };
}

export function buildClaim(claim: FencedClaim, p: Placeholders): Built {
  checkShape(claim, ["table", "key", "fence", "upsert"], "fenced claim");
  const row = checkRow(claim, "fenced claim");
  const statement = claim.upsert === true ? upsert(row, [], p) : update(row, [], undefined, p);
  return { statement, report: report(row, p), resource: row.resource, fence: row.fence };
}

/** The migration that makes a table fenceable: BIGINT, since fences (µs, ~2^50) overflow Postgres' INTEGER. */
export function addFenceColumnSql(table: string): string {
  return `ALTER TABLE ${identifier(table, "table")} ADD COLUMN ${FENCE} BIGINT NOT NULL DEFAULT 0`;
}
