// Fenced SQL on SQLite through a driver that sends every parameter as text, as D1's REST API does
// (/query takes params as strings): a fence compared as text must still be compared as a number.
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { fencedClaim, fencedWrite, type SqlDatabase } from "../../../../src/sql.ts";
import { F } from "../../../support/fenced-rows.ts";

/** D1's shape over node:sqlite, each bound value sent as its text. */
function textBinding(db: DatabaseSync): SqlDatabase {
  return {
    prepare(query) {
      let params: (string | null)[] = [];
      const statement = {
        bind: (...values: unknown[]) => ((params = values.map((v) => (v === null ? null : String(v)))), statement),
        first: async <T>() => (db.prepare(query).get(...params) ?? null) as T | null,
      };
      return statement;
    },
  } as SqlDatabase;
}

function invoices() {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE invoices (id TEXT PRIMARY KEY, status TEXT, fence BIGINT NOT NULL DEFAULT 0)");
  db.exec("INSERT INTO invoices (id, status) VALUES ('42', 'unpaid')");
  const row = () => ({ ...db.prepare("SELECT status, fence FROM invoices WHERE id = '42'").get() });
  return { sql: textBinding(db), row };
}

describe("fenced SQL with parameters bound as text", () => {
  it("refuses a stale write and a stale claim, and keeps the newer holder's value and fence", async () => {
    const { sql, row } = invoices();
    const [a, b] = [F + 1, F + 2];
    expect(await fencedWrite(sql, { table: "invoices", key: { id: "42" }, fence: b, set: { status: "refunded" } })).toEqual({ accepted: true });
    await expect(fencedWrite(sql, { table: "invoices", key: { id: "42" }, fence: a, set: { status: "paid" } })).rejects.toThrow(/stale/);
    await expect(fencedClaim(sql, { table: "invoices", key: { id: "42" }, fence: a })).rejects.toThrow(/stale/);
    expect(row()).toEqual({ status: "refunded", fence: b });
    expect(await fencedWrite(sql, { table: "invoices", key: { id: "42" }, fence: b + 1, set: { status: "paid" } })).toEqual({ accepted: true });
    expect(row()).toEqual({ status: "paid", fence: b + 1 });
  });
});
