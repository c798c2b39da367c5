/** Summary of a sample; all in the sample's unit (ms here). */
export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Quantile by linear interpolation between closest ranks of an ascending array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  const a = sorted[low] ?? Number.NaN;
  const b = sorted[high] ?? a;
  return a + (b - a) * (position - low);
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, v) => sum + v, 0) / values.length;
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    mean: round(mean(sorted)),
    p50: round(quantile(sorted, 0.5)),
    p90: round(quantile(sorted, 0.9)),
    p99: round(quantile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? Number.NaN),
  };
}

/** Rounds to `digits` decimals; NaN stays NaN (it prints as "n/a"). */
export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/**
 * A random order (Fisher–Yates): with a fixed rotation and few rounds, each library would always
 * run right after the same other one, and inherit the state it left the machine in.
 */
export function shuffled<T>(items: readonly T[]): T[] {
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as T, order[i] as T];
  }
  return order;
}
