import type { PushAvailability } from "../adapters/push-probe.ts";
import type { Transport } from "../adapters/types.ts";
import type { Measured } from "../../scripts/size.ts";
import type { HandoffPlan, HandoffRow } from "../scenarios/handoff.ts";
import type { LatencyPlan, LatencyResults } from "../scenarios/latency.ts";
import type { QuorumResults } from "../scenarios/quorum.ts";
import type { RequestFloor, RequestFloorPlan } from "../scenarios/request-floor.ts";
import type { ScalingCell, ScalingPlan } from "../scenarios/scaling.ts";
import type { TcpResults } from "../scenarios/tcp.ts";
import type { UncontendedPlan, UncontendedRow } from "../scenarios/uncontended.ts";
import type { Environment } from "./env.ts";

export interface LibraryInfo {
  id: string;
  label: string;
  transport: Transport;
  settings: string;
}

/** Everything one run measured: written as bench/results/latest.json. */
export interface BenchResults {
  environment: Environment;
  plans: { uncontended: UncontendedPlan; handoff: HandoffPlan; scaling: ScalingPlan; requestFloor: RequestFloorPlan; latency: LatencyPlan };
  libraries: LibraryInfo[];
  push: PushAvailability;
  uncontended: UncontendedRow[];
  handoff: {
    /** 2a: the releaser competes again at once (as issue 5 describes the run). */
    immediate: HandoffRow[];
    /** 2b: the releaser rejoins once another client has the lock, and 0–100 ms later. */
    toWaiter: HandoffRow[];
  };
  /** One request alone, after a pause as long as a hold and back to back: a yardstick for push. */
  requestFloor: RequestFloor;
  scaling: ScalingCell[];
  size: Measured[];
  /** Section 6, realistic latency (issue 26): the HTTP libraries through a delay proxy. */
  latency: LatencyResults;
  /** Section 5, quorum mode (issue 25): also in quorum.json. */
  quorum?: QuorumResults;
  /** Section 7, every library over TCP (issue 27): also in tcp.json. */
  tcp?: TcpResults;
  runSeconds: number;
}
