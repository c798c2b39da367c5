// Review s14c: fenced SQL findings, each against real SQLite (D1 in workerd through Miniflare,
// the same harness as fenced-sql.test.ts) where a database is involved.
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockConfigError } from "../../src/errors.ts";
import { addFenceColumnSql, fencedWriteSql, sql } from "../../src/fenced-sql.ts";
import { startWorker, type StartedWorker } from "../../scripts/worker-runtime.ts";
import type { Reply, RpcRequest } from "../workers/sql/worker.ts";

const F = 1_785_000_000_000_000;

let worker: StartedWorker | undefined;
beforeAll(async () => {
  worker = await startWorker(new URL("../workers/sql/worker.ts", import.meta.url), { d1Databases: ["DB"] });
});
afterAll(async () => {
  await worker?.dispose();
});

function call(request: RpcRequest): Promise<Reply> {
  if (worker === undefined) throw new Error("worker not started");
  return worker.rpc<Reply>(request);
}

async function ok(request: RpcRequest): Promise<unknown> {
  const reply = await call(request);
  if (!reply.ok) throw new Error(`${reply.error.class}: ${reply.error.message}`);
  return reply.result;
}

describe("fenced SQL on D1: a refusal must never be reported as accepted", () => {
  // execute() (src/fenced-sql.ts) decides "accepted" from meta.changes > 0. D1 (Miniflare's, at
  // least) computes meta.changes as the delta of total_changes(), which also counts rows written
  // by triggers. SQLite fires BEFORE INSERT triggers for an upsert before it finds the conflict and
  // takes the DO UPDATE path, whose fence guard then refuses the row: the table is untouched, but
  // the audit row makes changes 1, and a stale holder is told its write was accepted instead of
  // getting StaleFenceError (the signal that its lease is gone and its work must stop).
  it("a stale upsert into a table with a BEFORE INSERT audit trigger throws StaleFenceError, not { accepted: true }", async () => {
    await ok({ op: "exec", statements: [
      `CREATE TABLE "audited" (id TEXT PRIMARY KEY, value TEXT)`,
      addFenceColumnSql("audited"),
      `CREATE TABLE "audit_log" (id TEXT, at TEXT DEFAULT CURRENT_TIMESTAMP)`,
      `CREATE TRIGGER "audited_attempt" BEFORE INSERT ON "audited" BEGIN INSERT INTO "audit_log" (id) VALUES (NEW.id); END`,
      `INSERT INTO "audited" (id, value, fence) VALUES ('r', 'by B', ${F + 2})`,
    ] });
    const reply = await call({ op: "write", write: { table: "audited", key: { id: "r" }, set: { value: "by stale A" }, fence: F + 1, upsert: true } });
    // The database refused it: B's value and fence stay.
    expect(await ok({ op: "query", sql: `SELECT id, value, fence FROM "audited"` })).toEqual([{ id: "r", value: "by B", fence: F + 2 }]);
    // So the caller must hear that, as it does for the same table without the trigger.
    expect(reply).toMatchObject({ ok: false, error: { class: "StaleFenceError", fence: F + 1, highestFence: F + 2 } });
  });

  it("a stale upsert claim on such a table throws StaleFenceError too", async () => {
    await ok({ op: "exec", statements: [
      `CREATE TABLE "audited2" (id TEXT PRIMARY KEY, value TEXT)`,
      addFenceColumnSql("audited2"),
      `CREATE TABLE "audit_log2" (id TEXT)`,
      `CREATE TRIGGER "audited2_attempt" BEFORE INSERT ON "audited2" BEGIN INSERT INTO "audit_log2" (id) VALUES (NEW.id); END`,
      `INSERT INTO "audited2" (id, value, fence) VALUES ('r', 'by B', ${F + 2})`,
    ] });
    const reply = await call({ op: "claim", claim: { table: "audited2", key: { id: "r" }, fence: F + 1, upsert: true } });
    expect(await ok({ op: "query", sql: `SELECT fence FROM "audited2"` })).toEqual([{ fence: F + 2 }]);
    expect(reply).toMatchObject({ ok: false, error: { class: "StaleFenceError", fence: F + 1, highestFence: F + 2 } });
  });
});

describe("sql`...` scanner: placeholders formed across an interpolation", () => {
  // findProblem() (src/fenced-sql/expression.ts) scans each template piece on its own, so digits
  // right after ${value} are not seen as part of a placeholder; rendered, `${q}1` becomes SQLite's
  // numbered parameter ?1 (and Postgres' $31 from $3 + "1"), which takes another parameter's value
  // and shifts the numbering of every later `?`: the misnumbering the scan exists to refuse.
  it("refuses digits right after an interpolated value, which render as ?N / $NN", () => {
    const make = () => sql`remaining - ${1}2`;
    expect(make).toThrow(LockConfigError);
  });

  it("on real SQLite (node:sqlite) the rendered statement misnumbers its parameters and fails a valid write", () => {
    const db = new DatabaseSync(":memory:");
    db.exec(`CREATE TABLE "numbered" (id TEXT PRIMARY KEY, note TEXT, qty INTEGER NOT NULL DEFAULT 0)`);
    db.exec(addFenceColumnSql("numbered"));
    db.exec(`INSERT INTO "numbered" (id, note, qty) VALUES ('r', 'n', 5)`);
    let statement: ReturnType<typeof fencedWriteSql>;
    try {
      // qty = 71 as SQL reads `7` followed by `1`... except that the 7 is a bound parameter.
      statement = fencedWriteSql({ table: "numbered", key: { id: "r" }, fence: F, set: { note: "hello", qty: sql`${7}1` } });
    } catch (error) {
      expect(error).toBeInstanceOf(LockConfigError); // refused before anything is sent: fixed
      return;
    }
    // Rendered: SET "note" = ?, "qty" = (?1), "fence" = ? ...: ?1 is "hello", and every later ? is
    // one position early (the fence takes 7, the key takes the fence), so SQLite counts one parameter
    // fewer than were bound and refuses the statement, a valid write with a confusing driver error.
    expect(() => db.prepare(statement.text).run(...(statement.params as (string | number | null)[]))).not.toThrow();
    expect(db.prepare(`SELECT note, qty, fence FROM "numbered"`).get()).toEqual({ note: "hello", qty: 71, fence: F });
  });
});
