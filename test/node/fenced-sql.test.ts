import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockConfigError } from "../../src/errors.ts";
import {
  addFenceColumnSql, fencedClaim, fencedWrite, type SqlDatabase, type SqlValue,
} from "../../src/fenced-sql.ts";
import { startWorker, type StartedWorker } from "../../scripts/worker-runtime.ts";
import type { Reply, RpcRequest } from "../workers/sql/worker.ts";

// Fences as leases mint them: time-floored microseconds, far above 2^32.
const F = 1_785_000_000_000_000;

interface Row {
  id: string;
  value: string | null;
  remaining: number;
  fence: number;
}
type RpcError = Extract<Reply, { ok: false }>["error"];

let worker: StartedWorker | undefined;
let tables = 0;

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

async function refused(request: RpcRequest, errorClass: string): Promise<RpcError> {
  const reply = await call(request);
  expect(reply).toMatchObject({ ok: false, error: { class: errorClass } });
  return (reply as Extract<Reply, { ok: false }>).error;
}

/** A fresh fenced table per test, so tests cannot see each other's rows. */
async function table(...rows: Partial<Row>[]): Promise<string> {
  const name = `t${++tables}`;
  await ok({ op: "exec", statements: [
    `CREATE TABLE "${name}" (id TEXT PRIMARY KEY, value TEXT, remaining INTEGER NOT NULL DEFAULT 0)`,
    addFenceColumnSql(name),
  ] });
  for (const { id = "r", value = null, remaining = 0, fence = 0 } of rows) {
    await ok({ op: "query", sql: `INSERT INTO "${name}" (id, value, remaining, fence) VALUES (?, ?, ?, ?)`, params: [id, value, remaining, fence] });
  }
  return name;
}

async function rows(name: string): Promise<Row[]> {
  return (await ok({ op: "query", sql: `SELECT id, value, remaining, fence FROM "${name}" ORDER BY id` })) as Row[];
}

const write = (t: string, id: string, value: string, fence: number, upsert = false): RpcRequest =>
  ({ op: "write", write: { table: t, key: { id }, set: { value }, fence, upsert } });
const claim = (t: string, id: string, fence: number, upsert = false): RpcRequest =>
  ({ op: "claim", claim: { table: t, key: { id }, fence, upsert } });
const decrement = (t: string, id: string, quantity: SqlValue, fence: number): RpcRequest =>
  ({ op: "decrement", table: t, id, quantity, fence });

describe("fenced SQL on real SQLite (D1 in workerd)", () => {
  it("accepts an equal or higher fence, refuses a lower one with the highest fence seen, row unchanged", async () => {
    const t = await table({ id: "a", value: "v0", fence: F });
    expect(await ok(write(t, "a", "equal", F))).toEqual({ accepted: true });
    expect(await ok(write(t, "a", "higher", F + 5))).toEqual({ accepted: true });
    const error = await refused(write(t, "a", "lower", F + 4), "StaleFenceError");
    expect(error).toMatchObject({ code: "STALE_FENCE", fence: F + 4, highestFence: F + 5 });
    expect(await rows(t)).toEqual([{ id: "a", value: "higher", remaining: 0, fence: F + 5 }]);
  });

  it("stores the largest fences it accepts exactly, and refuses one no lease could have minted yet", async () => {
    const t = await table({ id: "a" });
    await refused(write(t, "a", "future", Number.MAX_SAFE_INTEGER), "LockConfigError");
    const max = (Date.now() + 3_000_000) * 1000 + 1; // near the top of what is accepted: 51 bits through BIGINT
    await ok(write(t, "a", "max", max));
    expect(await refused(write(t, "a", "below", max - 1), "StaleFenceError")).toMatchObject({ highestFence: max });
    expect(await rows(t)).toEqual([{ id: "a", value: "max", remaining: 0, fence: max }]);
  });

  it("Kleppmann's scenario: B writes with a higher fence, paused A's late write is refused, B's value stays", async () => {
    const t = await table({ id: "invoice", value: "unpaid", fence: F });
    const [a, b] = [F + 1, F + 2]; // A's lease lapsed while it was paused; B got the next fence.
    await ok(write(t, "invoice", "paid by B", b));
    expect(await refused(write(t, "invoice", "paid by A", a), "StaleFenceError")).toMatchObject({ fence: a, highestFence: b });
    expect(await rows(t)).toEqual([{ id: "invoice", value: "paid by B", remaining: 0, fence: b }]);
  });

  async function readModifyWrite(withClaim: boolean): Promise<Row[]> {
    const t = await table({ id: "counter", value: "10", fence: F });
    const [a, b] = [F + 1, F + 2];
    const read = async () => Number((await rows(t))[0]?.value);
    const aRead = await read(); // A reads 10, then pauses past its lease.
    if (withClaim) expect(await ok(claim(t, "counter", b))).toEqual({ accepted: true });
    const bRead = await read(); // B reads 10.
    const late = await call(write(t, "counter", String(aRead + 1), a)); // A's delayed write lands in the gap.
    expect(late.ok).toBe(!withClaim);
    expect(await ok(write(t, "counter", String(bRead + 1), b))).toEqual({ accepted: true });
    return rows(t);
  }

  it("claim before a read-modify-write refuses the old holder's write that lands before the new holder's", async () => {
    expect(await readModifyWrite(true)).toEqual([{ id: "counter", value: "11", remaining: 0, fence: F + 2 }]);
  });

  it("control: without claim that write lands, and B then overwrites it (one increment lost)", async () => {
    expect(await readModifyWrite(false)).toEqual([{ id: "counter", value: "11", remaining: 0, fence: F + 2 }]);
  });

  it("upsert inserts a missing row; a stale upsert is refused; a plain update of a missing row reports it", async () => {
    const t = await table();
    expect(await ok(write(t, "new", "first", F + 3, true))).toEqual({ accepted: true });
    expect(await refused(write(t, "new", "stale", F + 2, true), "StaleFenceError")).toMatchObject({ highestFence: F + 3 });
    expect(await ok(write(t, "new", "again", F + 3, true))).toEqual({ accepted: true });
    expect(await ok(write(t, "absent", "x", F))).toEqual({ accepted: false, reason: "missing" });
    expect(await rows(t)).toEqual([{ id: "new", value: "again", remaining: 0, fence: F + 3 }]);
  });

  it("claims a missing row only with upsert, and a claimed row refuses lower fences", async () => {
    const t = await table();
    expect(await ok(claim(t, "r", F))).toEqual({ accepted: false, reason: "missing" });
    expect(await rows(t)).toEqual([]);
    expect(await ok(claim(t, "r", F, true))).toEqual({ accepted: true });
    expect(await refused(claim(t, "r", F - 1, true), "StaleFenceError")).toMatchObject({ highestFence: F });
    expect(await refused(write(t, "r", "late", F - 1), "StaleFenceError")).toMatchObject({ highestFence: F });
    expect(await rows(t)).toEqual([{ id: "r", value: null, remaining: 0, fence: F }]);
  });

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

  // A fence column added without NOT NULL DEFAULT 0 leaves NULL in rows nobody fenced yet.
  it("takes a NULL fence as 0: the first fenced write or claim is accepted, and fences the row from then on", async () => {
    await ok({ op: "exec", statements: [
      'CREATE TABLE "nullfence" (id TEXT PRIMARY KEY, value TEXT, remaining INTEGER NOT NULL DEFAULT 0, fence BIGINT)',
      `INSERT INTO "nullfence" (id, value) VALUES ('a', 'old'), ('b', 'old'), ('c', 'old')`,
    ] });
    expect(await ok(write("nullfence", "a", "new", F))).toEqual({ accepted: true });
    expect(await ok(write("nullfence", "b", "new", F, true))).toEqual({ accepted: true });
    expect(await ok(claim("nullfence", "c", F))).toEqual({ accepted: true });
    for (const id of ["a", "b", "c"]) await refused(write("nullfence", id, "stale", F - 1), "StaleFenceError");
    expect(await rows("nullfence")).toEqual([
      { id: "a", value: "new", remaining: 0, fence: F },
      { id: "b", value: "new", remaining: 0, fence: F },
      { id: "c", value: "old", remaining: 0, fence: F },
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

  it("concurrent writes with random fences end with the highest fence and the value written with it", async () => {
    const t = await table({ id: "r" });
    const fences = [...new Set(Array.from({ length: 80 }, () => F + Math.floor(Math.random() * 1_000_000)))];
    const max = Math.max(...fences);
    // Four clients at once, each sending its writes concurrently: statements interleave on D1.
    const batches = [0, 1, 2, 3].map((n) => fences.filter((_, i) => i % 4 === n));
    const replies = (await Promise.all(batches.map((batch) =>
      ok({ op: "writeAll", writes: batch.map((f) => ({ table: t, key: { id: "r" }, set: { value: `by ${f}` }, fence: f })) }),
    ))) as Reply[][];
    batches.flat().forEach((fence, i) => {
      const reply = replies.flat()[i];
      if (fence === max) expect(reply).toEqual({ ok: true, result: { accepted: true } });
      else if (reply?.ok === false) expect(reply.error).toMatchObject({ class: "StaleFenceError", fence });
      if (reply?.ok === false) expect(reply.error.highestFence).toBeGreaterThan(fence);
    });
    expect(await rows(t)).toEqual([{ id: "r", value: `by ${max}`, remaining: 0, fence: max }]);
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
});
