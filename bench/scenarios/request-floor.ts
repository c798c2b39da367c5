import { Redis } from "@upstash/redis";
import type { Endpoint } from "../harness/server.ts";
import { summarize, type Summary } from "../harness/stats.ts";
import { now, sleep } from "../harness/timing.ts";

export interface RequestFloorPlan {
  samples: number;
  /** The quiet before each first request: the handoff's hold. */
  pauseMs: number;
}

export interface RequestFloor {
  pauseMs: number;
  /** A request sent after `pauseMs` of quiet, as a release after a hold is. */
  afterPauseMs: Summary;
  /** The request right after it. */
  backToBackMs: Summary;
}

/**
 * A yardstick for the push handoff, which is one request (the release) and one message: the time
 * of a lone PING through the local server, sent after a pause and then again at once, in pairs so
 * that a slow spell of the machine lands on both. On a machine whose processes sleep when idle, the
 * request after a pause also pays for waking the client, the server and Redis.
 */
export async function runRequestFloor(endpoint: Endpoint, plan: RequestFloorPlan): Promise<RequestFloor> {
  const redis = new Redis({ url: endpoint.url, token: endpoint.token, enableTelemetry: false });
  return { pauseMs: plan.pauseMs, ...(await pingPairs(() => redis.ping(), plan)) };
}

/** `plan.samples` PINGs after `plan.pauseMs` of quiet, each followed by one more, on a connection kept alive. */
export async function pingPairs(ping: () => Promise<unknown>, plan: RequestFloorPlan): Promise<Omit<RequestFloor, "pauseMs">> {
  const timed = async () => {
    const start = now();
    await ping();
    return now() - start;
  };
  await timed(); // a connection to keep alive, as the clients in the handoff runs have
  const afterPause: number[] = [];
  const backToBack: number[] = [];
  for (let n = 0; n < plan.samples; n++) {
    await sleep(plan.pauseMs);
    afterPause.push(await timed());
    backToBack.push(await timed());
  }
  return { afterPauseMs: summarize(afterPause), backToBackMs: summarize(backToBack) };
}
