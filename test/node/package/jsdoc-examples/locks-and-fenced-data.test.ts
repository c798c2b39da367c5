// The JSDoc @example blocks of src/, run as written against real Redis (through the local
// Upstash-compatible server); only the scaffolding each example implies is added here.
// These: createLocks, createFencedStore, and fenced SQL (sql, fencedWrite, fencedClaim).
import { DatabaseSync } from "node:sqlite";
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createFencedStore, createLocks, StaleFenceError, type Lease, type LockState } from "../../../../src/index.ts";
import {
  fencedClaim, fencedWrite, fencedWriteSql, sql, type SqlDatabase, type SqlPreparedStatement,
} from "../../../../src/fencing/sql/fenced-sql.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

/** env.DB: in-memory SQLite shaped like D1 (prepare, bind, first), the part fenced SQL uses. */
function d1(...setup: string[]): SqlDatabase {
  const db = new DatabaseSync(":memory:");
  setup.forEach((statement) => db.exec(statement));
  const prepare = (query: string, params: (string | number | null)[] = []): SqlPreparedStatement => ({
    bind: (...values) => prepare(query, values.map((v) => (typeof v === "boolean" ? Number(v) : v))), // as D1 binds them
    first: async <T>() => (db.prepare(query).get(...params) ?? null) as T | null,
  });
  return { prepare: (query) => prepare(query) };
}

const rows = (db: SqlDatabase, table: string) => db.prepare(`SELECT * FROM ${table}`).first();

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe("@example src/lock/locks.ts createLocks", () => {
  it("createLocks example: runs the work under the lock with its fence and live signal, then releases it", async () => {
    const { url, token } = inject("upstash");
    vi.stubEnv("UPSTASH_REDIS_REST_URL", url);
    vi.stubEnv("UPSTASH_REDIS_REST_TOKEN", token);
    const order = { id: "42" };
    const calls: { fence: number; aborted: boolean; state: LockState }[] = [];
    async function chargeCard(_order: typeof order, { fence, signal }: { fence: number; signal: AbortSignal }) {
      calls.push({ fence, aborted: signal.aborted, state: await locks.inspect("order:42") });
    }

    const locks = createLocks({ redis: Redis.fromEnv(), prefix: "app", leaseMs: 10_000 });
    await locks.withLock("order:42", async (lease) => {
      await chargeCard(order, { fence: lease.fence, signal: lease.signal });
    });

    expect(calls).toEqual([{ fence: calls[0]?.state.fence, aborted: false, state: expect.objectContaining({ held: true }) }]);
    expect((await locks.inspect("order:42")).held).toBe(false);
  });
});

describe("@example src/fencing/store.ts createFencedStore", () => {
  it("createFencedStore example: claims with the read, writes the invoice back, and older fences are refused after", async () => {
    const redis = upstash();
    const locks = createLocks({ redis, prefix: uniquePrefix("invoice") });
    interface Invoice { id: number; total: number; paid?: boolean }
    await createFencedStore({ redis, prefix: "shop" }).write("invoice:42", { id: 42, total: 100 }, 1); // written by an older holder

    const store = createFencedStore({ redis, prefix: "shop" });
    await locks.withLock("invoice:42", async (lease) => {
      const current = await store.read<Invoice>("invoice:42", { fence: lease.fence }); // claim + read
      await store.write("invoice:42", { ...current?.value, paid: true }, lease.fence);
    });

    const { fence } = await locks.inspect("invoice:42");
    expect(await store.read("invoice:42")).toEqual({ value: { id: 42, total: 100, paid: true }, fence });
    await expect(store.write("invoice:42", { id: 42, total: 0 }, 1)).rejects.toThrow(StaleFenceError);
  });
});

describe("@example src/fencing/sql/expression.ts sql", () => {
  it("sql example: the interpolated quantity is bound as a parameter, never spliced into the text", () => {
    const quantity = 3;
    const { text, params } = fencedWriteSql({ table: "events", key: { id: "evt-1" }, fence: 1,
      set: { remaining: sql`remaining - ${quantity}` }, where: sql`remaining >= ${quantity}`,
    });
    expect(text).toContain('"remaining" = (remaining - ?)');
    expect(text).toMatch(/AND \(remaining >= \?\) RETURNING .* AS "fence"$/);
    expect(text).not.toContain("3");
    expect(params).toEqual([3, 1, "evt-1", 1, "evt-1", 3]);
  });
});

describe("@example src/fencing/sql/fenced-sql.ts fencedWrite", () => {
  it("fencedWrite example: sells while enough remain, answers 409 sold out after, row keeps the lease's fence", async () => {
    const env = { DB: d1("CREATE TABLE events (id TEXT PRIMARY KEY, remaining INTEGER NOT NULL, fence BIGINT NOT NULL DEFAULT 0)",
      "INSERT INTO events (id, remaining) VALUES ('evt-1', 5)") };
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("events") });
    async function buy(lease: Lease, quantity: number): Promise<Response> {
      const sold = await fencedWrite(env.DB, {
        table: "events", key: { id: "evt-1" }, fence: lease.fence,
        set: { remaining: sql`remaining - ${quantity}` },
        where: sql`remaining >= ${quantity}`,
      });
      if (!sold.accepted) return new Response("sold out", { status: 409 });
      return new Response("sold");
    }

    const [first, second, fence] = await locks.withLock("evt-1", async (lease) =>
      [await buy(lease, 3), await buy(lease, 3), lease.fence] as const);
    expect([first.status, await second.text()]).toEqual([200, "sold out"]);
    expect(await rows(env.DB, "events")).toEqual({ id: "evt-1", remaining: 2, fence });
  });
});

describe("@example src/fencing/sql/fenced-sql.ts fencedClaim", () => {
  it("fencedClaim example: an older holder's write landing between the claim and the write is refused, not lost", async () => {
    const env = { DB: d1("CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL, fence BIGINT NOT NULL DEFAULT 0)",
      "INSERT INTO accounts (id, balance) VALUES ('acc-1', 100)") };
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("accounts") });
    const next = (account: Record<string, unknown> | null) => Number(account?.balance) - 30;
    const id = "acc-1";
    const older = await locks.acquire(`account:${id}`);
    await older.release(); // its holder paused past the lease; its write comes later

    const lease = await locks.acquire(`account:${id}`);
    await fencedClaim(env.DB, { table: "accounts", key: { id }, fence: lease.fence });
    const account = await env.DB.prepare("SELECT balance FROM accounts WHERE id = ?").bind(id).first();
    await expect(fencedWrite(env.DB, { table: "accounts", key: { id }, fence: older.fence, set: { balance: 0 } }))
      .rejects.toThrow(StaleFenceError);
    await fencedWrite(env.DB, { table: "accounts", key: { id }, fence: lease.fence, set: { balance: next(account) } });

    expect(await rows(env.DB, "accounts")).toEqual({ id, balance: 70, fence: lease.fence });
    await lease.release();
  });
});
