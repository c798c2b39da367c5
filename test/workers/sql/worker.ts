// Fixture for test/node/fenced-sql/ (started by test/support/sql-worker.ts): a JSON RPC over
// fetch around the fenced SQL helper, so every statement runs on real SQLite inside workerd's D1.
import type { D1Database } from "@cloudflare/workers-types/index.ts";
import { LockError, LockConfigError, StaleFenceError } from "../../../src/core/errors.ts";
import { fencedClaim, fencedWrite, sql, type FencedClaim, type FencedRow, type SqlDatabase, type SqlValue } from "../../../src/sql.ts";

interface Env {
  DB: D1Database;
}

// Compile-time proof that a real D1 binding satisfies the library's structural interface.
const asSqlDatabase = (db: D1Database): SqlDatabase => db;

type PlainWrite = FencedRow & { set: Record<string, SqlValue>; upsert?: boolean };

export type RpcRequest =
  | { op: "exec"; statements: string[] }
  | { op: "query"; sql: string; params?: SqlValue[] }
  | { op: "write"; write: PlainWrite }
  /** Runs the writes concurrently inside one isolate, so their statements interleave on D1. */
  | { op: "writeAll"; writes: PlainWrite[] }
  | { op: "claim"; claim: FencedClaim }
  | { op: "decrement"; table: string; id: string; quantity: SqlValue; fence: number };

export type Reply =
  | { ok: true; result: unknown }
  | { ok: false; error: { class: string; code?: string; message: string; fence?: number; highestFence?: number; issues?: readonly string[] } };

async function handle(db: SqlDatabase, d1: D1Database, request: RpcRequest): Promise<unknown> {
  switch (request.op) {
    case "exec":
      for (const statement of request.statements) await d1.prepare(statement).run();
      return null;
    case "query":
      return (await d1.prepare(request.sql).bind(...(request.params ?? [])).all()).results;
    case "write":
      return write(db, request.write);
    case "writeAll":
      return Promise.all(request.writes.map((w) => reply(write(db, w))));
    case "claim":
      return fencedClaim(db, request.claim);
    case "decrement": {
      const { table, id, quantity, fence } = request;
      return fencedWrite(db, {
        table, key: { id }, fence,
        set: { remaining: sql`remaining - ${quantity}` },
        where: sql`remaining >= ${quantity}`,
      });
    }
  }
}

function write(db: SqlDatabase, w: PlainWrite) {
  return fencedWrite(db, w.upsert === true ? { ...w, upsert: true } : { ...w, upsert: false });
}

function reply(result: Promise<unknown>): Promise<Reply> {
  return result.then((value): Reply => ({ ok: true, result: value }), describe);
}

function describe(error: unknown): Reply {
  if (error instanceof StaleFenceError) {
    return { ok: false, error: { class: "StaleFenceError", code: error.code, message: error.message, fence: error.fence, highestFence: error.highestFence } };
  }
  if (error instanceof LockConfigError) {
    return { ok: false, error: { class: "LockConfigError", code: error.code, message: error.message, issues: error.issues } };
  }
  const name = error instanceof LockError ? error.name : "Error";
  return { ok: false, error: { class: name, message: error instanceof Error ? error.message : String(error) } };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const body = (await request.json()) as RpcRequest;
    return Response.json(await reply(handle(asSqlDatabase(env.DB), env.DB, body)));
  },
};
