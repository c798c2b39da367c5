// What a caller asks of fencelock/sql: the row a fenced write or claim targets, and what it sets.
import type { SqlExpression, SqlValue } from "./expression.ts";

/** One row of a table with a `fence BIGINT NOT NULL DEFAULT 0` column, found by its primary or unique key. */
export interface FencedRow {
  /** Quoted, as every name here, so Postgres matches it case-sensitively: pass it as stored (lower case unless created quoted). */
  table: string;
  /** Column(s) and value(s) of the row's primary or unique key, e.g. `{ id: "evt-1" }`: a key that matches several rows writes none. */
  key: Record<string, SqlValue>;
  /** The lease's fence: the write applies iff it is at least the highest fence the row has seen. */
  fence: number;
}

/** Updates an existing row. `set` may use sql`...` expressions; `where` adds a guard ANDed to the fence check. */
export interface FencedUpdate extends FencedRow {
  set: Record<string, SqlValue | SqlExpression>;
  where?: SqlExpression;
  upsert?: false;
}

/** Inserts the row when missing, else updates it: plain values only, and `key` exactly a primary or unique key (ON CONFLICT needs one). */
export interface FencedUpsert extends FencedRow {
  set: Record<string, SqlValue>;
  where?: never;
  upsert: true;
}

export type FencedWrite = FencedUpdate | FencedUpsert;

/** Registers the fence on the row before a read-modify-write; `upsert` creates the row (other columns need defaults; the key, a unique one). */
export interface FencedClaim extends FencedRow {
  upsert?: boolean;
}
