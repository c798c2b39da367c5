import { createFencedStore, createLocks } from "../../src/index.ts";
import { uniquePrefix, upstash } from "./upstash.ts";

/** A lock set and a fenced store on one client, under a prefix of their own. */
export function setup(label: string, leaseMs = 10_000) {
  const prefix = uniquePrefix(label);
  const redis = upstash();
  return { redis, prefix, locks: createLocks({ redis, prefix, leaseMs }), store: createFencedStore({ redis, prefix }) };
}
