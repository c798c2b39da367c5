import { measureAll, type Measured } from "../../scripts/size.ts";
import { progress } from "../harness/timing.ts";

/** The bundle sizes `npm run size` reports, measured the same way (esbuild, minified, gzip -9). */
export async function runSize(): Promise<Measured[]> {
  progress("bundle sizes");
  return measureAll();
}
