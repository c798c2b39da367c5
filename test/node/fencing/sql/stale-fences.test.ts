// Fenced writes and claims on real SQLite (D1 in workerd): stale fences refused, the claim gap
// closed, upserts, NULL fences, and concurrent writers ending with the highest fence.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Reply } from "../../../workers/sql/worker.ts";
import {
  call, claim, ok, refused, rows, startSqlWorker, stopSqlWorker, table, write,
} from "../../../support/sql-worker.ts";
import { F, type Row } from "../../../support/fenced-rows.ts";

beforeAll(startSqlWorker);
afterAll(stopSqlWorker);

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
});
