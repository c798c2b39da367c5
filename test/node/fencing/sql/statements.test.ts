// The SQL that fenced writes and claims send, and the refusals that keep a statement's fence
// guard intact; run against real SQLite in stale-fences.test.ts and guards-and-refusals.test.ts.
import { describe, expect, it } from "vitest";
import { LockConfigError } from "../../../../src/core/errors.ts";
import { addFenceColumnSql, fencedClaimSql, fencedWriteSql, sql, type FencedWrite } from "../../../../src/fencing/sql/fenced-sql.ts";
import { F } from "../../../support/fenced-rows.ts";


describe("fenced SQL text", () => {
  const ticket: FencedWrite = {
    table: "events", key: { id: "evt-1" }, fence: F,
    set: { sold_to: "ada", remaining: sql`remaining - ${2}` },
    where: sql`remaining >= ${2} AND status = 'open'`,
  };

  it("renders Postgres placeholders $1..$n in the order the parameters appear", () => {
    expect(fencedWriteSql(ticket, "$n")).toEqual({
      text: 'UPDATE "events" SET "sold_to" = $1, "remaining" = (remaining - $2), "fence" = CAST($3 AS BIGINT) ' +
        'WHERE "events"."id" = $4 AND CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) <= CAST($5 AS BIGINT) ' +
        'AND (SELECT COUNT(*) FROM "events" WHERE "events"."id" = $6) = 1 ' +
        `AND (remaining >= $7 AND status = 'open') RETURNING CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) AS "fence"`,
      params: ["ada", 2, F, "evt-1", F, "evt-1", 2],
    });
    expect(fencedWriteSql(ticket).text).toBe(
      'UPDATE "events" SET "sold_to" = ?, "remaining" = (remaining - ?), "fence" = CAST(? AS BIGINT) ' +
        'WHERE "events"."id" = ? AND CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) <= CAST(? AS BIGINT) ' +
        'AND (SELECT COUNT(*) FROM "events" WHERE "events"."id" = ?) = 1 ' +
        `AND (remaining >= ? AND status = 'open') RETURNING CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) AS "fence"`,
    );
  });

  it("renders upserts and claims valid for both SQLite and Postgres", () => {
    const upsert = fencedWriteSql({ table: "docs", key: { tenant: "t1", id: 7 }, set: { body: "hi" }, fence: F, upsert: true }, "$n");
    expect(upsert).toEqual({
      text: 'INSERT INTO "docs" ("tenant", "id", "body", "fence") VALUES ($1, $2, $3, CAST($4 AS BIGINT)) ' +
        'ON CONFLICT ("tenant", "id") DO UPDATE SET "body" = excluded."body", "fence" = excluded."fence" ' +
        'WHERE CAST(CAST(COALESCE("docs"."fence", 0) AS DOUBLE PRECISION) AS BIGINT) <= CAST(excluded."fence" AS BIGINT) RETURNING CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) AS "fence"',
      params: ["t1", 7, "hi", F],
    });
    expect(fencedClaimSql({ table: "docs", key: { id: 7 }, fence: F }, "$n")).toEqual({
      text: 'UPDATE "docs" SET "fence" = CAST($1 AS BIGINT) WHERE "docs"."id" = $2 AND CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) <= CAST($3 AS BIGINT) ' +
        'AND (SELECT COUNT(*) FROM "docs" WHERE "docs"."id" = $4) = 1 RETURNING CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) AS "fence"',
      params: [F, 7, F, 7],
    });
    expect(fencedClaimSql({ table: "docs", key: { id: 7 }, fence: F, upsert: true }).text).toBe(
      'INSERT INTO "docs" ("id", "fence") VALUES (?, CAST(? AS BIGINT)) ON CONFLICT ("id") DO UPDATE SET "fence" = excluded."fence" ' +
        'WHERE CAST(CAST(COALESCE("docs"."fence", 0) AS DOUBLE PRECISION) AS BIGINT) <= CAST(excluded."fence" AS BIGINT) RETURNING CAST(CAST(COALESCE("fence", 0) AS DOUBLE PRECISION) AS BIGINT) AS "fence"',
    );
    expect(addFenceColumnSql("docs")).toBe('ALTER TABLE "docs" ADD COLUMN "fence" BIGINT NOT NULL DEFAULT 0');
  });

  it("refuses a write or claim with a key it does not know, or an upsert that is not a boolean", () => {
    const base = { table: "events", key: { id: "e1" }, fence: F };
    // A misspelled `where` would otherwise drop the guard, and sell what is not there.
    expect(() => fencedWriteSql({ ...base, set: { remaining: sql`remaining - ${1}` }, Where: sql`remaining >= ${1}` } as never))
      .toThrow(/unknown option "Where"/);
    expect(() => fencedWriteSql({ ...base, set: { a: 1 }, upsert: "true" } as never)).toThrow(/upsert: expected true or false/);
    expect(() => fencedClaimSql({ ...base, upsert: 1 } as never)).toThrow(/upsert: expected true or false/);
    expect(() => fencedClaimSql({ ...base, set: { a: 1 } } as never)).toThrow(/unknown option "set"/);
    expect(() => fencedWriteSql(null as never)).toThrow(LockConfigError);
  });

  it("sql`...` refuses text that could change the statement around it", () => {
    const refusals: [() => unknown, RegExp][] = [
      [() => sql`remaining - 1; DELETE FROM events`, /;/],
      [() => sql`remaining - 1 -- `, /comment/],
      [() => sql`remaining /* */`, /comment/],
      [() => sql`remaining - ?`, /placeholder/],
      [() => sql`remaining - $1`, /placeholder/],
      [() => sql`remaining - :n`, /placeholder/],
      [() => sql`1) OR (1`, /\)/],
      [() => sql`(remaining`, /\(/],
      [() => sql`name = 'open`, /quote/],
      [() => sql`name = '${"x"}'`, /inside quotes/],
      [() => sql`E'\\'' || $1 || 'x''`, /backslash/],
      // SQLite reads [a'] as a quoted name; a scan that saw a quote there would miss the `)`.
      [() => sql`EXISTS (SELECT 1 AS [a'])) OR (1 = 1 OR EXISTS (SELECT 1 AS [b'])`, /\[/],
      [() => sql`tags[?]`, /\[/],
      [() => sql`  `, /empty/],
      [() => sql`remaining - ${{} as never}`, /value/],
      [() => sql`remaining - ${Number.NaN}`, /value/],
      // Rendered, `${7}1` is ?1 (SQLite's first parameter) or $31, and `x${7}` Postgres' name x$1.
      [() => sql`remaining - ${7}1`, /touching a name or number/],
      [() => sql`remaining - x${7}`, /touching a name or number/],
      [() => sql`remaining - é${7}`, /touching a name or number/],
      [() => (sql as unknown as (s: string[]) => unknown)(["remaining - 1"]), /template tag/],
    ];
    for (const [make, message] of refusals) {
      expect(make).toThrow(LockConfigError);
      expect(make).toThrow(message);
    }
    expect(() => sql`status = 'a;b -- ?' AND price::numeric > ${1} AND "weird;name" = 1`).not.toThrow();
    expect(() => sql`(${1}+${2})*${3}`).not.toThrow();
  });

  // SQLite also reads #name as a named parameter (tokenize.c: '#' is CC_VARALPHA), so it would take
  // a position and shift the fence's.
  it("sql`...` refuses SQLite's #name, #::name and @name parameters like :name and $name, not Postgres' @> or #", () => {
    expect(() => sql`remaining - #qty`).toThrow(LockConfigError);
    expect(() => fencedWriteSql({ table: "events", key: { id: "e" }, fence: F, set: { remaining: sql`remaining - #qty` } }))
      .toThrow(/placeholder/);
    expect(() => sql`remaining - #é`).toThrow(LockConfigError); // any byte above 0x7F is a name character
    expect(() => sql`remaining - #::qty`).toThrow(LockConfigError); // a Tcl-style name, not a cast
    expect(() => sql`flags # ${1}`).not.toThrow(); // Postgres XOR
    expect(() => sql`remaining - @qty`).toThrow(/placeholder/);
    // Postgres' containment and text-search operators are no parameters to either database.
    expect(() => sql`meta @> ${"{}"}::jsonb AND ${"{}"}::jsonb <@ meta AND body @@ to_tsquery(${"x"})`).not.toThrow();
  });

  it("refuses bad writes before building anything", () => {
    const base = { table: "events", key: { id: "e" }, set: { v: 1 }, fence: F };
    const bad: unknown[] = [
      { ...base, table: "events; DROP TABLE x" },
      { ...base, table: 'ev"ents' },
      { ...base, key: {} },
      { ...base, key: { id: null } },
      { ...base, set: {} },
      { ...base, set: { Fence: 1 } },
      { ...base, set: { v: { toString: () => "1" } } },
      { ...base, set: { v: "x" }, where: "1 = 1" },
      { ...base, set: { v: sql`v + 1` }, upsert: true },
      { ...base, where: sql`v > 0`, upsert: true },
      ...[0, -1, 1.5, 2 ** 53, "12", Number.NaN].map((fence) => ({ ...base, fence })),
    ];
    for (const write of bad) expect(() => fencedWriteSql(write as FencedWrite)).toThrow(LockConfigError);
    expect(() => fencedWriteSql(base, "$" as never)).toThrow(LockConfigError);
    expect(() => addFenceColumnSql("events; --")).toThrow(LockConfigError);
  });

  // String() throws on an object without a prototype (querystring.parse makes those) and
  // JSON.stringify on a BigInt: the error saying what is wrong must not fail while it is written.
  it("says what a value it refuses is, whatever the value", () => {
    const base = { table: "events", key: { id: "e" }, set: { v: 1 }, fence: F };
    const bare = Object.create(null) as object;
    const refusals: [() => unknown, RegExp][] = [
      [() => fencedWriteSql({ ...base, table: 10n as never }), /got 10n/],
      [() => addFenceColumnSql(10n as never), /got 10n/],
      [() => fencedWriteSql({ ...base, key: { id: bare as never } }), /got an object/],
      [() => fencedWriteSql({ ...base, set: { v: 10n as never } }), /got 10n/],
      [() => sql`remaining - ${bare as never}`, /got an object/],
      [() => fencedWriteSql({ ...base, table: "x".repeat(1_000) }), /got "x{60}…"$/],
    ];
    for (const [make, message] of refusals) expect(make).toThrow(message);
  });
});
