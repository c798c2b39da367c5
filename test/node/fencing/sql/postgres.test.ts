// Fenced SQL on real Postgres: PGlite (Postgres compiled to WASM) in this process runs the
// statements fencedWriteSql and fencedClaimSql render with "$n" placeholders, and fencedWrite and
// fencedClaim through a small adapter. stale-fences.test.ts and guards-and-refusals.test.ts
// cover the same on SQLite (D1 in workerd).
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockConfigError, StaleFenceError } from "../../../../src/core/errors.ts";
import {
  addFenceColumnSql, fencedClaim, fencedClaimSql, fencedWrite, fencedWriteSql, sql,
  type FencedUpdate, type FencedUpsert, type SqlDatabase, type SqlPreparedStatement, type SqlStatement, type SqlValue,
} from "../../../../src/fencing/sql/fenced-sql.ts";
import { F, type Row } from "../../../support/fenced-rows.ts";

const $n = { placeholders: "$n" } as const;

let pg: PGlite;
let db: SqlDatabase;
let tables = 0;

/** Any Postgres driver with a query(text, params) fits fencedWrite's D1-shaped interface this way. */
function asSqlDatabase(driver: PGlite): SqlDatabase {
  return {
    prepare(text) {
      const bound = (params: SqlValue[]): SqlPreparedStatement => ({
        bind: (...values) => bound(values),
        first: async <T>() => (await driver.query<T>(text, params)).rows[0] ?? null,
      });
      return bound([]);
    },
  };
}

beforeAll(async () => {
  pg = await PGlite.create();
  db = asSqlDatabase(pg);
});
afterAll(() => pg.close());

/** The rows a statement returns: one when it wrote, none when the fence (or guard) refused it. */
async function run({ text, params }: SqlStatement): Promise<unknown[]> {
  return (await pg.query(text, params)).rows;
}

/** A fresh table per test, made fenceable by the migration addFenceColumnSql returns. */
async function table(...rows: Partial<Row>[]): Promise<string> {
  const name = `t${++tables}`;
  await pg.exec(`CREATE TABLE ${name} (id TEXT PRIMARY KEY, value TEXT, remaining INTEGER NOT NULL DEFAULT 0)`);
  await pg.exec(addFenceColumnSql(name));
  for (const { id = "r", value = null, remaining = 0, fence = 0 } of rows) {
    await pg.query(`INSERT INTO ${name} (id, value, remaining, fence) VALUES ($1, $2, $3, $4)`, [id, value, remaining, fence]);
  }
  return name;
}

async function rows(name: string): Promise<Row[]> {
  return (await pg.query<Row>(`SELECT id, value, remaining, fence FROM ${name} ORDER BY id`)).rows;
}

const update = (t: string, id: string, value: string, fence: number): FencedUpdate => ({ table: t, key: { id }, set: { value }, fence });
const upsert = (t: string, id: string, value: string, fence: number): FencedUpsert => ({ table: t, key: { id }, set: { value }, fence, upsert: true });
const decrement = (t: string, quantity: SqlValue, fence: number): FencedUpdate =>
  ({ table: t, key: { id: "evt" }, fence, set: { remaining: sql`remaining - ${quantity}` }, where: sql`remaining >= ${quantity}` });

describe("fenced SQL on real Postgres (PGlite)", () => {
  it("runs the $n statements: one row back when accepted (equal or higher fence), none when stale", async () => {
    const t = await table({ id: "a", value: "v0", fence: F });
    expect(await run(fencedWriteSql(update(t, "a", "equal", F), "$n"))).toHaveLength(1);
    expect(await run(fencedWriteSql(update(t, "a", "higher", F + 5), "$n"))).toHaveLength(1);
    expect(await run(fencedWriteSql(update(t, "a", "lower", F + 4), "$n"))).toEqual([]);
    expect(await run(fencedClaimSql({ table: t, key: { id: "a" }, fence: F + 4 }, "$n"))).toEqual([]);
    expect(await rows(t)).toEqual([{ id: "a", value: "higher", remaining: 0, fence: F + 5 }]);
  });

  it("fencedWrite: B's higher fence wins, paused A's late write throws StaleFenceError, B's value stays", async () => {
    const t = await table({ id: "invoice", value: "unpaid", fence: F });
    expect(await fencedWrite(db, update(t, "invoice", "paid by B", F + 2), $n)).toEqual({ accepted: true });
    const late = fencedWrite(db, update(t, "invoice", "paid by A", F + 1), $n);
    await expect(late).rejects.toThrow(StaleFenceError);
    await expect(late).rejects.toMatchObject({ fence: F + 1, highestFence: F + 2 });
    expect(await rows(t)).toEqual([{ id: "invoice", value: "paid by B", remaining: 0, fence: F + 2 }]);
  });

  // Parameters go untyped and Postgres types each from its context (BIGINT next to the fence
  // column): compared as text, "1000000000000000" would sort below "999999999999999".
  it("compares BIGINT fences as numbers, and stores the largest it accepts exactly", async () => {
    const t = await table({ id: "a", fence: 999_999_999_999_999 }, { id: "b", fence: 10 ** 15 });
    expect(await fencedWrite(db, update(t, "a", "16 digits", 10 ** 15), $n)).toEqual({ accepted: true });
    await expect(fencedWrite(db, update(t, "b", "15 digits", 999_999_999_999_999), $n)).rejects.toThrow(StaleFenceError);
    const max = (Date.now() + 3_000_000) * 1000 + 1; // near the top of what is accepted: 51 bits
    expect(await fencedWrite(db, upsert(t, "a", "max", max), $n)).toEqual({ accepted: true });
    await expect(fencedWrite(db, upsert(t, "a", "below", max - 1), $n)).rejects.toMatchObject({ highestFence: max });
    expect((await rows(t))[0]).toEqual({ id: "a", value: "max", remaining: 0, fence: max });
  });

  // Drivers that declare a JS number's type rather than leave it to Postgres: int8, numeric or
  // float8 (exact below 2^53) all compare and store the fence as a number too.
  it("compares fences as numbers when the driver types them int8, numeric or float8", async () => {
    for (const oid of [20, 1700, 701]) {
      const t = await table({ id: "a", fence: 999_999_999_999_999 });
      const typed = async ({ text, params }: SqlStatement) =>
        (await pg.query(text, params, { paramTypes: params.map((p) => (typeof p === "number" ? oid : 0)) })).rows;
      expect(await typed(fencedWriteSql(upsert(t, "a", "16 digits", 10 ** 15), "$n"))).toHaveLength(1);
      expect(await typed(fencedWriteSql(update(t, "a", "15 digits", 999_999_999_999_999), "$n"))).toEqual([]);
      expect(await typed(fencedClaimSql({ table: t, key: { id: "a" }, fence: 10 ** 15 + 1 }, "$n"))).toHaveLength(1);
      expect(await rows(t)).toEqual([{ id: "a", value: "16 digits", remaining: 0, fence: 10 ** 15 + 1 }]);
    }
  });

  it("upsert inserts a missing row; a stale upsert is refused; a plain update of a missing row reports it", async () => {
    const t = await table();
    expect(await run(fencedWriteSql(upsert(t, "new", "first", F + 3), "$n"))).toHaveLength(1);
    expect(await run(fencedWriteSql(upsert(t, "new", "stale", F + 2), "$n"))).toEqual([]);
    await expect(fencedWrite(db, upsert(t, "new", "stale", F + 2), $n)).rejects.toMatchObject({ highestFence: F + 3 });
    expect(await fencedWrite(db, upsert(t, "new", "again", F + 3), $n)).toEqual({ accepted: true });
    expect(await fencedWrite(db, update(t, "absent", "x", F), $n)).toEqual({ accepted: false, reason: "missing" });
    expect(await rows(t)).toEqual([{ id: "new", value: "again", remaining: 0, fence: F + 3 }]);
  });

  it("claims a missing row only with upsert; a claim refuses the old holder's write in a read-modify-write", async () => {
    const t = await table();
    expect(await fencedClaim(db, { table: t, key: { id: "r" }, fence: F }, $n)).toEqual({ accepted: false, reason: "missing" });
    expect(await fencedClaim(db, { table: t, key: { id: "r" }, fence: F, upsert: true }, $n)).toEqual({ accepted: true });
    await expect(fencedClaim(db, { table: t, key: { id: "r" }, fence: F - 1, upsert: true }, $n)).rejects.toThrow(StaleFenceError);
    // A (fence F + 1) read the row, then paused past its lease; B claims with F + 2 before reading.
    expect(await fencedClaim(db, { table: t, key: { id: "r" }, fence: F + 2 }, $n)).toEqual({ accepted: true });
    await expect(fencedWrite(db, update(t, "r", "by A", F + 1), $n)).rejects.toMatchObject({ highestFence: F + 2 });
    expect(await fencedWrite(db, update(t, "r", "by B", F + 2), $n)).toEqual({ accepted: true });
    expect(await rows(t)).toEqual([{ id: "r", value: "by B", remaining: 0, fence: F + 2 }]);
  });

  // A fence column added without NOT NULL DEFAULT 0 leaves NULL in rows nobody fenced yet.
  it("takes a NULL fence as 0: the first fenced write, upsert or claim is accepted and fences the row", async () => {
    await pg.exec(`CREATE TABLE nullfence (id TEXT PRIMARY KEY, value TEXT, remaining INTEGER NOT NULL DEFAULT 0, fence BIGINT);
      INSERT INTO nullfence (id, value) VALUES ('a', 'old'), ('b', 'old'), ('c', 'old')`);
    expect(await fencedWrite(db, update("nullfence", "a", "new", F), $n)).toEqual({ accepted: true });
    expect(await fencedWrite(db, upsert("nullfence", "b", "new", F), $n)).toEqual({ accepted: true });
    expect(await fencedClaim(db, { table: "nullfence", key: { id: "c" }, fence: F }, $n)).toEqual({ accepted: true });
    for (const id of ["a", "b", "c"]) await expect(fencedWrite(db, update("nullfence", id, "stale", F - 1), $n)).rejects.toThrow(StaleFenceError);
    expect((await rows("nullfence")).map(({ value, fence }) => [value, fence])).toEqual([["new", F], ["new", F], ["old", F]]);
  });

  it("decrements stock under a where guard with bound values: never below zero, stale decrements refused", async () => {
    const t = await table({ id: "evt", remaining: 3, fence: F });
    expect(await run(fencedWriteSql(decrement(t, 1, F + 10), "$n"))).toHaveLength(1);
    await expect(fencedWrite(db, decrement(t, 1, F + 9), $n)).rejects.toMatchObject({ highestFence: F + 10 });
    expect(await fencedWrite(db, decrement(t, 3, F + 10), $n)).toEqual({ accepted: false, reason: "guard" });
    expect(await fencedWrite(db, decrement(t, 2, F + 10), $n)).toEqual({ accepted: true });
    expect(await fencedWrite(db, decrement(t, 1, F + 10), $n)).toEqual({ accepted: false, reason: "guard" });
    // Typed by its context, a hostile "quantity" fails the statement (SQLite compares it as text): nothing runs.
    await expect(fencedWrite(db, decrement(t, `1; DROP TABLE ${t}`, F + 10), $n)).rejects.toThrow(/invalid input syntax for type integer/);
    expect(await rows(t)).toEqual([{ id: "evt", value: null, remaining: 0, fence: F + 10 }]);
  });

  it("refuses a key that matches several rows with LockConfigError, whatever the fence, and writes none", async () => {
    const t = await table({ id: "a", value: "g", fence: F }, { id: "b", value: "g", fence: F + 200 });
    for (const fence of [F + 100, F + 300]) {
      const several = fencedWrite(db, { table: t, key: { value: "g" }, set: { remaining: 1 }, fence }, $n);
      await expect(several).rejects.toThrow(LockConfigError);
      await expect(several).rejects.toThrow(/matches 2 rows; use a primary or unique key/);
    }
    await expect(fencedClaim(db, { table: t, key: { value: "g" }, fence: F + 300 }, $n)).rejects.toThrow(LockConfigError);
    expect((await rows(t)).map(({ remaining, fence }) => [remaining, fence])).toEqual([[0, F], [0, F + 200]]);
  });
});

describe("where Postgres differs from SQLite", () => {
  // ON CONFLICT needs a unique constraint on exactly the key's columns; SQLite refuses it too.
  it("refuses an upsert whose key has no unique constraint, even when it matches no row", async () => {
    const t = await table();
    const loose: FencedUpsert = { table: t, key: { value: "g" }, set: { remaining: 1 }, fence: F, upsert: true };
    await expect(fencedWrite(db, loose, $n)).rejects.toThrow(/no unique or exclusion constraint matching the ON CONFLICT/);
    expect(await rows(t)).toEqual([]);
  });

  // Names are quoted (so keywords work): Postgres then matches case exactly, and an unquoted
  // CREATE TABLE Tickets made a table named tickets.
  // A 4-byte REAL keeps 24 bits: near 1.8e15 it rounds a fence by up to a minute of µs, and
  // rounded down, an older holder's fence would pass the guard (fencing.md says not to use it).
  it("throws LockConfigError on the first write to a fence column that rounds fences (REAL), saying to make it BIGINT", async () => {
    const t = `t${++tables}`;
    await pg.exec(`CREATE TABLE ${t} (id TEXT PRIMARY KEY, value TEXT, fence REAL)`);
    const fence = (Date.now() + 1_000) * 1000 + 42;
    await expect(fencedWrite(db, upsert(t, "a", "B", fence), $n)).rejects.toThrow(/Invalid fence column: .*stored fence \d+ as \d+.*BIGINT/);
  });

  it("matches quoted names case-sensitively: pass them as stored", async () => {
    await pg.exec(`CREATE TABLE Tickets (id TEXT PRIMARY KEY, value TEXT); ${addFenceColumnSql("tickets")}`);
    await expect(fencedWrite(db, upsert("Tickets", "a", "x", F), $n)).rejects.toThrow(/relation "Tickets" does not exist/);
    await expect(fencedWrite(db, upsert("tickets", "a", "x", F), $n)).resolves.toEqual({ accepted: true });
    // A keyword works as a name because it is quoted.
    await pg.exec(`CREATE TABLE "user" (id TEXT PRIMARY KEY); ${addFenceColumnSql("user")}`);
    await expect(fencedClaim(db, { table: "user", key: { id: "u" }, fence: F, upsert: true }, $n)).resolves.toEqual({ accepted: true });
  });

  it("types a bound value by its context: with none, cast it", async () => {
    const t = await table({ id: "r", remaining: 1 });
    const set = (remaining: ReturnType<typeof sql>): FencedUpdate => ({ table: t, key: { id: "r" }, set: { remaining }, fence: F });
    await expect(fencedWrite(db, set(sql`${2} + ${3}`), $n)).rejects.toThrow(/operator is not unique: unknown \+ unknown/);
    expect(await fencedWrite(db, set(sql`${2}::int + ${3}::int`), $n)).toEqual({ accepted: true });
    expect((await rows(t))[0]?.remaining).toBe(5);
  });

  it("fails on ? placeholders, the default: fencedWrite needs { placeholders: \"$n\" } for Postgres", async () => {
    const t = await table({ id: "a", value: "keep" });
    await expect(fencedWrite(db, update(t, "a", "x", F))).rejects.toThrow(/syntax error/);
    expect((await rows(t))[0]?.value).toBe("keep");
  });
});
