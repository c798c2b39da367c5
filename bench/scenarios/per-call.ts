import { round } from "../harness/stats.ts";
import { asClient, type Client } from "./clients.ts";

/** Requests per single call, warm (scripts loaded, connection open). */
export interface PerCall {
  acquire: number;
  heartbeat: number | null;
  release: number;
}

/** Requests per acquire, heartbeat and release call, one call at a time, after one uncounted round. */
export function measurePerCall(client: Client | undefined, samples: number): Promise<PerCall> {
  if (!client) throw new Error("no client");
  const { adapter, counter } = client;
  return asClient(client, async () => {
    const totals = { acquire: 0, heartbeat: 0, release: 0 };
    const count = async (key: keyof typeof totals, call: () => Promise<unknown>) => {
      const before = counter.requests;
      await call();
      totals[key] += counter.requests - before;
    };
    // Round -1 is not counted: it loads heartbeat's script too, so every call below is warm.
    for (let i = -1; i < samples; i++) {
      if (i === 0) Object.assign(totals, { acquire: 0, heartbeat: 0, release: 0 });
      let handle: unknown;
      await count("acquire", async () => (handle = await adapter.acquire("per-call")));
      if (adapter.heartbeat) await count("heartbeat", () => adapter.heartbeat?.(handle) ?? Promise.resolve());
      await count("release", () => adapter.release(handle));
    }
    return {
      acquire: round(totals.acquire / samples),
      heartbeat: adapter.heartbeat ? round(totals.heartbeat / samples) : null,
      release: round(totals.release / samples),
    };
  });
}
