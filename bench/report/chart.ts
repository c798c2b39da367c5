import * as vega from "vega";
import * as vegaLite from "vega-lite";
import type { TopLevelSpec } from "vega-lite";
import type { HandoffRow } from "../scenarios/handoff.ts";
import { quantile } from "../harness/stats.ts";

const POINTS = 200;
const WAITER = "2b: to a waiting client (releaser rejoins after a handoff and 0–100 ms)";
const NEXT = "2a: to the next holder (releaser competes again at once)";

interface CdfPoint {
  library: string;
  kind: string;
  gapMs: number;
  fraction: number;
}

/**
 * The handoff gaps of each library as CDFs on a log time axis, rendered headless to SVG: one
 * panel for handoffs to a waiting client (2b), one for the gap to whoever held it next (2a).
 */
export async function handoffChart(toWaiter: HandoffRow[], immediate: HandoffRow[], subtitle: string): Promise<string> {
  const libraries = toWaiter.filter((row) => row.available).map((row) => row.label);
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: "Handoff gap: holder calls release() → next holder's acquire() resolves", subtitle },
    background: "white",
    data: { values: [...cdfPoints(toWaiter, WAITER, "waiter"), ...cdfPoints(immediate, NEXT, "next")] },
    facet: { column: { field: "kind", type: "nominal", title: null, sort: [WAITER, NEXT] } },
    spec: {
      width: 420,
      height: 300,
      mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
      encoding: {
        x: { field: "gapMs", type: "quantitative", title: "gap (ms, log scale)", scale: { type: "log" } },
        y: { field: "fraction", type: "quantitative", title: "fraction of handoffs ≤ gap", axis: { format: "%" } },
        color: { field: "library", type: "nominal", title: null, sort: libraries, legend: { orient: "bottom", labelLimit: 400, columns: 3 } },
      },
    },
  };
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Up to POINTS quantiles per library and panel (the raw gaps are in the JSON). */
function cdfPoints(rows: HandoffRow[], kind: string, gaps: "waiter" | "next"): CdfPoint[] {
  return rows.flatMap((row) => (row.available ? cdf(row.label, kind, gaps === "waiter" ? row.toWaiterGaps : row.gaps) : []));
}

function cdf(library: string, kind: string, gaps: number[]): CdfPoint[] {
  if (gaps.length === 0) return [];
  const sorted = gaps.map((g) => Math.max(g, 0.01)).sort((a, b) => a - b);
  const steps = Math.min(POINTS, sorted.length);
  return Array.from({ length: steps + 1 }, (_, i) => ({ library, kind, gapMs: quantile(sorted, i / steps), fraction: i / steps }));
}
