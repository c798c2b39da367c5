// Fenced SQL on real SQLite (D1 in workerd) refusing what would weaken its guard (a table named
// excluded, a key matching several rows, triggers, bad identifiers and fences), and its
// decrements under a guard; then fencedWrite's and fencedClaim's options, without a database.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockConfigError } from "../../../../src/core/errors.ts";
import { addFenceColumnSql, fencedClaim, fencedWrite, type SqlDatabase } from "../../../../src/fencing/sql/fenced-sql.ts";
import type { RpcRequest } from "../../../workers/sql/worker.ts";
import {
  call, claim, decrement, ok, refused, rows, startSqlWorker, stopSqlWorker, table, write,
} from "../../../support/sql-worker.ts";
import { F } from "../../../support/fenced-rows.ts";

beforeAll(startSqlWorker);
afterAll(stopSqlWorker);

describe("fenced SQL on real SQLite (D1 in workerd)", () => {
  // In an upsert, excluded."fence" names the proposed row, even where the table itself is named
  // excluded: the guard would compare the proposed fence with itself and accept a stale write.
  it("refuses an upsert into a table named excluded, and still fences plain updates of it", async () => {
    const t = "Excluded";
    await ok({ op: "exec", statements: [
      `CREATE TABLE "${t}" (id TEXT PRIMARY KEY, value TEXT, remaining INTEGER NOT NULL DEFAULT 0)`,
      addFenceColumnSql(t),
      `INSERT INTO "${t}" (id, value, fence) VALUES ('r', 'by B', ${F + 2})`,
    ] });
    const error = await refused(write(t, "r", "by stale A", F + 1, true), "LockConfigError");
    expect(error.message).toMatch(/excluded/);
    expect(await rows(t)).toEqual([{ id: "r", value: "by B", remaining: 0, fence: F + 2 }]);
    await refused(write(t, "r", "by stale A", F + 1), "StaleFenceError");
    expect(await ok(write(t, "r", "by C", F + 3))).toEqual({ accepted: true });
    expect(await rows(t)).toEqual([{ id: "r", value: "by C", remaining: 0, fence: F + 3 }]);
  });

  // Each row is fenced on its own: a key matching a row that saw F and one that saw F + 200 would
  // take F + 100 on the first. Such a key is a mistake, so it writes nothing and says so.
  it("refuses a key that matches several rows, whatever the fence, and writes none of them", async () => {
    const t = await table({ id: "a", value: "g", fence: F }, { id: "b", value: "g", fence: F + 200 });
    const several = (fence: number): RpcRequest =>
      ({ op: "write", write: { table: t, key: { value: "g" }, set: { remaining: 1 }, fence } });
    for (const fence of [F + 100, F + 300]) {
      expect((await refused(several(fence), "LockConfigError")).message).toMatch(/key: .*\/g matches 2 rows; use a primary or unique key/);
    }
    await refused({ op: "claim", claim: { table: t, key: { value: "g" }, fence: F + 300 } }, "LockConfigError");
    expect(await rows(t)).toEqual([
      { id: "a", value: "g", remaining: 0, fence: F },
      { id: "b", value: "g", remaining: 0, fence: F + 200 },
    ]);
  });

  it("decrements stock under a guard: never below zero, stale decrements refused, quantities bound", async () => {
    const t = await table({ id: "evt", remaining: 3, fence: F });
    expect(await ok(decrement(t, "evt", 1, F + 10))).toEqual({ accepted: true });
    expect(await refused(decrement(t, "evt", 1, F + 9), "StaleFenceError")).toMatchObject({ highestFence: F + 10 });
    expect(await ok(decrement(t, "evt", 3, F + 10))).toEqual({ accepted: false, reason: "guard" });
    // A hostile "quantity" is a bound parameter: compared as text, it matches nothing and runs nothing.
    expect(await ok(decrement(t, "evt", `1; DROP TABLE "${t}"`, F + 10))).toEqual({ accepted: false, reason: "guard" });
    expect(await ok(decrement(t, "evt", 2, F + 10))).toEqual({ accepted: true });
    expect(await ok(decrement(t, "evt", 1, F + 10))).toEqual({ accepted: false, reason: "guard" });
    expect(await ok(decrement(t, "absent", 1, F + 10))).toEqual({ accepted: false, reason: "missing" });
    expect(await rows(t)).toEqual([{ id: "evt", value: null, remaining: 0, fence: F + 10 }]);
  });

  it("never oversells: 20 concurrent buyers for 5 tickets", async () => {
    const t = await table({ id: "evt", remaining: 5 });
    const replies = await Promise.all(Array.from({ length: 20 }, () => ok(decrement(t, "evt", 1, F))));
    expect(replies.filter((r) => (r as { accepted: boolean }).accepted)).toHaveLength(5);
    expect(replies.filter((r) => (r as { reason?: string }).reason === "guard")).toHaveLength(15);
    expect((await rows(t))[0]?.remaining).toBe(0);
  });

  // D1 counts rows written by triggers as changes, and SQLite runs an upsert's BEFORE INSERT
  // trigger before the fence refuses the row: a count of changes would call this accepted.
  it("refuses a stale upsert or claim into a table whose insert trigger writes elsewhere", async () => {
    const t = await table({ id: "r", value: "by B", fence: F + 2 });
    await ok({ op: "exec", statements: [
      `CREATE TABLE "${t}_log" (id TEXT)`,
      `CREATE TRIGGER "${t}_audit" BEFORE INSERT ON "${t}" BEGIN INSERT INTO "${t}_log" (id) VALUES (NEW.id); END`,
    ] });
    const stale = { class: "StaleFenceError", fence: F + 1, highestFence: F + 2 };
    expect(await refused(write(t, "r", "by stale A", F + 1, true), "StaleFenceError")).toMatchObject(stale);
    expect(await refused(claim(t, "r", F + 1, true), "StaleFenceError")).toMatchObject(stale);
    expect(await rows(t)).toEqual([{ id: "r", value: "by B", remaining: 0, fence: F + 2 }]);
    expect(await call(write(t, "n", "new", F + 3, true))).toEqual({ ok: true, result: { accepted: true } });
  });

  it("refuses bad identifiers with LockConfigError and leaves the table untouched", async () => {
    const t = await table({ id: "a", value: "keep", fence: F });
    const bad: RpcRequest[] = [
      write(`${t}; DROP TABLE "${t}"`, "a", "x", F + 1),
      write(`${t}" --`, "a", "x", F + 1),
      write("", "a", "x", F + 1),
      write("a".repeat(64), "a", "x", F + 1),
      { op: "write", write: { table: t, key: { 'id" = "id" OR 1=1 --': "a" }, set: { value: "x" }, fence: F + 1 } },
      { op: "write", write: { table: t, key: { id: "a" }, set: { "value\" = 'x', \"fence\" = 0 --": "x" }, fence: F + 1 } },
      { op: "write", write: { table: t, key: { id: "a" }, set: { fence: 0 }, fence: F + 1 } },
      { op: "write", write: { table: t, key: { id: "a" }, set: { ID: "b" }, fence: F + 1 } },
      { op: "claim", claim: { table: `${t}'`, key: { id: "a" }, fence: F + 1 } },
    ];
    for (const request of bad) await refused(request, "LockConfigError");
    expect(await rows(t)).toEqual([{ id: "a", value: "keep", remaining: 0, fence: F }]);
  });

  // D1 binds numbers as REAL: a TEXT column kept them as 15-digit text, rounded, and compared them as text.
  it("compares fences as integers in a TEXT fence column: a holder's own write passes, an older upsert is refused", async () => {
    const t = `text_fence_${Date.now()}`;
    await ok({ op: "exec", statements: [`CREATE TABLE "${t}" (id TEXT PRIMARY KEY, value TEXT, fence TEXT)`] });
    const [older, newer] = [F + 1_234_561, F + 1_234_567];
    await ok(claim(t, "a", newer, true));
    expect(await ok(write(t, "a", "by the holder", newer))).toEqual({ accepted: true });
    expect(await refused(write(t, "a", "stale", older, true), "StaleFenceError")).toMatchObject({ highestFence: newer });
    expect(await ok({ op: "query", sql: `SELECT value, fence FROM "${t}"` })).toEqual([{ value: "by the holder", fence: String(newer) }]);
    // What an older fencelock left in such a column: a REAL's text, which a plain CAST reads as 1.
    await ok({ op: "query", sql: `INSERT INTO "${t}" (id, value, fence) VALUES ('b', 'kept', '1.785000002e+15')` });
    expect(await refused(write(t, "b", "stale", F), "StaleFenceError")).toMatchObject({ highestFence: 1_785_000_002_000_000 });
  });

  // D1 takes a double-quoted name that is no column for a string literal.
  it("fails a write whose key names no column, rather than reporting the row missing or writing another", async () => {
    const t = await table({ id: "invoice_id", value: "keep", fence: F });
    for (const value of ["42", "invoice_id"]) {
      const reply = await call({ op: "write", write: { table: t, key: { invoice_id: value }, set: { value: "x" }, fence: F + 1 } });
      expect(reply).toMatchObject({ ok: false, error: { message: expect.stringMatching(/no such column/) } });
    }
    expect(await rows(t)).toEqual([{ id: "invoice_id", value: "keep", remaining: 0, fence: F }]);
  });

  it("refuses fences that no lease could carry (0, -1, 1.5, 2^53, \"12\") with LockConfigError, table untouched", async () => {
    const t = await table({ id: "a", value: "keep", fence: 0 });
    for (const fence of [0, -1, 1.5, 2 ** 53, "12"] as unknown as number[]) {
      const error = await refused(write(t, "a", "x", fence), "LockConfigError");
      expect(error.message).toMatch(/fence/);
      await refused(claim(t, "a", fence, true), "LockConfigError");
      await refused(decrement(t, "a", 1, fence), "LockConfigError");
    }
    expect(await rows(t)).toEqual([{ id: "a", value: "keep", remaining: 0, fence: 0 }]);
  });
});

describe("fencedWrite and fencedClaim options", () => {
  /** A D1-shaped database that records the statements it is handed. */
  function recordingDb(): SqlDatabase & { prepared: string[] } {
    const db = {
      prepared: [] as string[],
      prepare(query: string) {
        db.prepared.push(query);
        const statement = { bind: () => statement, first: async () => null };
        return statement;
      },
    };
    return db;
  }
  const claim = { table: "events", key: { id: "e1" }, fence: F };

  it("refuses a misspelled or null options object before any statement reaches the database", async () => {
    const db = recordingDb();
    // With the option ignored, Postgres would get `?` placeholders and fail on every write.
    await expect(fencedWrite(db, { ...claim, set: { v: 1 } }, { placeholder: "$n" } as never)).rejects.toThrow(/unknown option "placeholder"/);
    await expect(fencedClaim(db, claim, { placeholder: "$n" } as never)).rejects.toThrow(LockConfigError);
    await expect(fencedWrite(db, { ...claim, set: { v: 1 } }, null as never)).rejects.toThrow(LockConfigError);
    await expect(fencedClaim(db, claim, null as never)).rejects.toThrow(LockConfigError);
    expect(db.prepared).toEqual([]);
  });

  it("rejects, rather than throws, when the write itself is bad", async () => {
    const written = fencedWrite(recordingDb(), { ...claim, set: {} });
    await expect(written).rejects.toThrow(LockConfigError);
  });

  // A D1 binding misnamed in wrangler.toml is undefined.
  it("says what a database must be when it is given none", async () => {
    for (const db of [undefined, {}]) {
      await expect(fencedClaim(db as never, claim)).rejects.toThrow(/Invalid fenced SQL database: expected a D1 database/);
    }
  });
});
