/**
 * How big and how long each scenario runs. The short form (in `npm test`) keeps the timings that
 * the guarantee's condition depends on (gaps, lags, the chain's 10 s lead) and cuts the rest.
 */
export interface Form {
  label: "short" | "full";
  names: number;
  clients: number;
  /** Lost holders per failover. */
  stragglers: number;
  /** How long a lost holder waits for a newer holder's write before it writes anyway (beyond the gap). */
  stragglerBoundMs: number;
  warmMs: number;
  /** Healthy running after a fault is over. */
  afterMs: number;
  leaseMs: number;
  timeoutMs: number;
  /** Kill to promotion: above τ (1 s) with 1.5 s to spare on equal clocks. */
  gapMs: number;
  splitMs: number;
  /** The promoted replica's clock lead in failover-clock-ahead. */
  aheadMs: number;
  stepBackMs: number;
  /** Server A's lead in the chain: large enough that, without the 1 s rule, B's fences still lead C's clock. */
  chainLeadMs: number;
}

const common = {
  leaseMs: 2_000,
  timeoutMs: 2_000,
  gapMs: 2_500,
  chainLeadMs: 10_000,
  stragglerBoundMs: 15_000,
};

export const SHORT: Form = {
  ...common, label: "short", names: 12, clients: 3, stragglers: 4, warmMs: 1_000, afterMs: 2_000,
  splitMs: 3_000, aheadMs: 3_000, stepBackMs: 3_000,
};

export const FULL: Form = {
  ...common, label: "full", names: 100, clients: 8, stragglers: 16, warmMs: 3_000, afterMs: 6_000,
  splitMs: 6_000, aheadMs: 5_000, stepBackMs: 5_000,
};
