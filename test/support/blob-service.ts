import { Hono } from "hono";
import { createFencedStore, createLocks } from "../../src/index.ts";
import { requireFence, type FenceVariables } from "../../src/hono.ts";
import { uniquePrefix, upstash } from "./upstash.ts";

/** A blob service whose writes are checked by fence, over the real store and Redis. */
export function blobService() {
  const redis = upstash();
  const prefix = uniquePrefix("blobs");
  const store = createFencedStore({ redis, prefix });
  const app = new Hono<{ Variables: FenceVariables }>();
  app.put("/blobs/:id", requireFence({ store, resource: (c) => c.req.param("id") }), async (c) => {
    const fence = c.get("fence");
    if (c.req.query("overtaken")) await store.claim(c.req.param("id"), fence + 5); // a newer holder got in
    await store.write(c.req.param("id"), await c.req.text(), fence);
    return c.json({ stored: true, fence });
  });
  return { app, store, locks: createLocks({ redis, prefix }) };
}
