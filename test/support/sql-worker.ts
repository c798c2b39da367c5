// The fenced SQL helper run on real SQLite: D1 in workerd, through test/workers/sql/worker.ts's
// JSON RPC. One worker, with its own in-memory database, per test file.
import { expect } from "vitest";
import { addFenceColumnSql, type SqlValue } from "../../src/fencing/sql/fenced-sql.ts";
import { startWorker, type StartedWorker } from "../../scripts/worker-runtime.ts";
import type { Reply, RpcRequest } from "../workers/sql/worker.ts";

import type { Row } from "./fenced-rows.ts";
type RpcError = Extract<Reply, { ok: false }>["error"];

let worker: StartedWorker | undefined;
let tables = 0;

/** Starts the worker: call in beforeAll, and stopSqlWorker in afterAll. */
export async function startSqlWorker(): Promise<void> {
  worker = await startWorker(new URL("../workers/sql/worker.ts", import.meta.url), { d1Databases: ["DB"] });
}

export async function stopSqlWorker(): Promise<void> {
  await worker?.dispose();
}

export function call(request: RpcRequest): Promise<Reply> {
  if (worker === undefined) throw new Error("worker not started");
  return worker.rpc<Reply>(request);
}

export async function ok(request: RpcRequest): Promise<unknown> {
  const reply = await call(request);
  if (!reply.ok) throw new Error(`${reply.error.class}: ${reply.error.message}`);
  return reply.result;
}

export async function refused(request: RpcRequest, errorClass: string): Promise<RpcError> {
  const reply = await call(request);
  expect(reply).toMatchObject({ ok: false, error: { class: errorClass } });
  return (reply as Extract<Reply, { ok: false }>).error;
}

/** A fresh fenced table per test, so tests cannot see each other's rows. */
export async function table(...rows: Partial<Row>[]): Promise<string> {
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

export async function rows(name: string): Promise<Row[]> {
  return (await ok({ op: "query", sql: `SELECT id, value, remaining, fence FROM "${name}" ORDER BY id` })) as Row[];
}

export const write = (t: string, id: string, value: string, fence: number, upsert = false): RpcRequest =>
  ({ op: "write", write: { table: t, key: { id }, set: { value }, fence, upsert } });
export const claim = (t: string, id: string, fence: number, upsert = false): RpcRequest =>
  ({ op: "claim", claim: { table: t, key: { id }, fence, upsert } });
export const decrement = (t: string, id: string, quantity: SqlValue, fence: number): RpcRequest =>
  ({ op: "decrement", table: t, id, quantity, fence });
