// The row and fence the fenced SQL tests share, on SQLite (D1) and on Postgres alike.

/** A fence as leases mint them: time-floored microseconds, far above 2^32. */
export const F = 1_785_000_000_000_000;

/** A row of the tests' tables: `fence` is the column addFenceColumnSql adds. */
export interface Row {
  id: string;
  value: string | null;
  remaining: number;
  fence: number;
}
