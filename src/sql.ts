// fencelock/sql: fenced writes and claims in SQL (D1, SQLite, Postgres).
export * from "./fencing/sql/fenced-sql.ts";
