import type { Summary } from "../harness/stats.ts";

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
