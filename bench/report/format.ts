import { mean, quantile, type Summary } from "../harness/stats.ts";

/** A Markdown table; the first `left` columns are left-aligned, the rest right-aligned. */
export function table(headers: string[], rows: string[][], left = 1): string {
  const align = headers.map((_, i) => (i < left ? "---" : "---:"));
  return [headers, align, ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** A number for a table: fixed digits, thousands separators, "n/a" for NaN or null. */
export function num(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "n/a";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** "a ÷ b" as "1.23×"; n/a when either side is missing. */
export function ratio(a: number | null | undefined, b: number | null | undefined): string {
  if (a == null || b == null || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return "n/a";
  return `${num(a / b, 2)}×`;
}

/** Under this many samples a p99 is no more than the largest of them. */
export const P99_MIN_SAMPLES = 100;

/** A summary's p99, or "n/a" when there are too few samples for one. */
export function p99(summary: Summary, digits = 1): string {
  return summary.n < P99_MIN_SAMPLES ? "n/a" : num(summary.p99, digits);
}

export const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

export function check(met: boolean | null): string {
  if (met === null) return "- [ ] (not measured)";
  return met ? "- [x]" : "- [ ] **missed**";
}

/** The middle half of a sample, NaN left out: its mean (a quarter of the values dropped at each end, rounded down) and its quartiles. */
export interface MiddleHalf {
  mean: number;
  low: number;
  high: number;
  n: number;
}

/** A figure judged on the round-by-round middle half: one stray round, fast or slow, does not decide it. */
export function middleHalf(values: readonly number[]): MiddleHalf {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const cut = Math.floor(sorted.length / 4);
  return { mean: mean(sorted.slice(cut, sorted.length - cut)), low: quantile(sorted, 0.25), high: quantile(sorted, 0.75), n: sorted.length };
}

/** a[i] ÷ b[i] for each round both have. */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  return a.flatMap((x, i) => {
    const y = b[i];
    return y !== undefined && Number.isFinite(x) && Number.isFinite(y) && y !== 0 ? [x / y] : [];
  });
}

/** "1.23× (1.10–1.31×)", or "12.3 (11.0–14.2)" without the unit: the middle half's mean, then its quartiles. */
export function middle(m: MiddleHalf, digits: number, unit = ""): string {
  if (!Number.isFinite(m.mean)) return "n/a";
  const value = `${num(m.mean, digits)}${unit}`;
  return m.n < 2 ? value : `${value} (${num(m.low, digits)}–${num(m.high, digits)}${unit})`;
}
