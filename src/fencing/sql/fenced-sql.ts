// Fenced writes and claims run on a D1-shaped database (fencelock/sql).
import { LockConfigError, StaleFenceError } from "../../core/errors.ts";
import type { SqlValue } from "./expression.ts";
import type { FencedClaim, FencedWrite } from "./requests.ts";
import { buildClaim, buildWrite, checkShape, type Built, type Placeholders, type SqlStatement } from "./statements.ts";

export { sql } from "./expression.ts";
export type { SqlExpression, SqlValue } from "./expression.ts";
export { addFenceColumnSql } from "./statements.ts";
export type { FencedClaim, FencedRow, FencedUpdate, FencedUpsert, FencedWrite } from "./requests.ts";
export type { Placeholders, SqlStatement } from "./statements.ts";

/** The part of a D1 database (or any driver wrapped to look like one) that fenced writes use. */
export interface SqlDatabase {
  prepare(query: string): SqlPreparedStatement;
}

export interface SqlPreparedStatement {
  bind(...values: SqlValue[]): SqlPreparedStatement;
  first<T = Record<string, unknown>>(): Promise<T | null>;
}

/**
 * Accepted, or refused for a reason that is not a stale fence: `guard` when the row's fence
 * allowed the write but `where` did not (sold out), `missing` when there is no such row.
 */
export type FencedSqlOutcome = { accepted: true } | { accepted: false; reason: "guard" | "missing" };

export interface FencedSqlOptions {
  /** "$n" when `db` wraps a Postgres driver (with "?" Postgres sees a syntax error); default "?". */
  placeholders?: Placeholders;
}

/**
 * Writes a row iff `fence` is at least the highest fence the row has seen, decided by the
 * database in one statement. A stale fence rejects with StaleFenceError (the caller's lease is
 * gone, its work must stop); a failed `where` guard or a missing row is returned, not thrown.
 * Bad names, values, fences or options reject with LockConfigError before anything is sent; a
 * key that matches several rows rejects with it after a statement that wrote none of them. On
 * Postgres a value of the wrong type for where it stands rejects with the driver's error.
 *
 * @example
 * // once: CREATE TABLE events (id TEXT PRIMARY KEY, remaining INTEGER NOT NULL, fence BIGINT NOT NULL DEFAULT 0)
 * const sold = await fencedWrite(env.DB, {
 *   table: "events", key: { id: "evt-1" }, fence: lease.fence,
 *   set: { remaining: sql`remaining - ${quantity}` },
 *   where: sql`remaining >= ${quantity}`,
 * });
 * if (!sold.accepted) return new Response("sold out", { status: 409 });
 */
export async function fencedWrite(db: SqlDatabase, write: FencedWrite, options: FencedSqlOptions = {}): Promise<FencedSqlOutcome> {
  return execute(db, buildWrite(write, placeholdersOf(options)));
}

/**
 * Registers `fence` on the row before a read-modify-write, so a paused older holder's write
 * that lands before this holder's own write is refused instead of silently lost.
 *
 * @example
 * await fencedClaim(env.DB, { table: "accounts", key: { id }, fence: lease.fence });
 * const account = await env.DB.prepare("SELECT balance FROM accounts WHERE id = ?").bind(id).first();
 * await fencedWrite(env.DB, { table: "accounts", key: { id }, fence: lease.fence, set: { balance: next(account) } });
 */
export async function fencedClaim(db: SqlDatabase, claim: FencedClaim, options: FencedSqlOptions = {}): Promise<FencedSqlOutcome> {
  return execute(db, buildClaim(claim, placeholdersOf(options)));
}

/** The SQL of a fenced write, for running with your own driver (e.g. Postgres with `"$n"`). */
export function fencedWriteSql(write: FencedWrite, placeholders: Placeholders = "?"): SqlStatement {
  return buildWrite(write, placeholders).statement;
}

/** The SQL of a fenced claim, for running with your own driver. */
export function fencedClaimSql(claim: FencedClaim, placeholders: Placeholders = "?"): SqlStatement {
  return buildClaim(claim, placeholders).statement;
}

/** Strict, as every options object here: a misspelled `placeholders` would send `?` to Postgres. */
function placeholdersOf(options: FencedSqlOptions): Placeholders {
  checkShape(options, ["placeholders"], "fenced SQL options");
  return options.placeholders ?? "?";
}

/**
 * Accepted, if the column stored the fence exactly. A 4-byte REAL rounds it by up to a minute, and
 * rounded down it would let older fences through: the first write says so.
 */
function storedExactly(stored: unknown, { fence, resource }: Built): FencedSqlOutcome {
  if (Number(stored) === fence) return { accepted: true };
  throw new LockConfigError("fence column", [
    `${resource} stored fence ${fence} as ${String(stored)}: make the column BIGINT (addFenceColumnSql), which holds fences exactly`,
  ]);
}

async function execute(db: SqlDatabase, built: Built): Promise<FencedSqlOutcome> {
  // A binding misnamed in wrangler.toml is undefined: say so, not "cannot read 'prepare'".
  if (typeof db?.prepare !== "function") {
    throw new LockConfigError("fenced SQL database", ["expected a D1 database, or a driver wrapped to look like one (prepare(text).bind(...values).first())"]);
  }
  const { statement, report } = built;
  const written = await db.prepare(statement.text).bind(...statement.params).first<{ fence: unknown }>();
  if (written) return storedExactly(written.fence, built);
  // The statement above decided, atomically; this read only explains why. A row's fence never
  // goes down, so one above ours here means ours is stale now, whenever it got there.
  const row = await db.prepare(report.text).bind(...report.params).first<{ rows: unknown; fence: unknown }>();
  // Postgres drivers return COUNT and BIGINT as strings.
  const rows = Number(row?.rows ?? 0);
  if (rows === 0) return { accepted: false, reason: "missing" };
  if (rows > 1) throw new LockConfigError("fenced row key", [`${built.resource} matches ${rows} rows; use a primary or unique key`]);
  const highest = Number(row?.fence);
  if (highest > built.fence) throw new StaleFenceError(built.resource, built.fence, highest);
  return { accepted: false, reason: "guard" };
}
