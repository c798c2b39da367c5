// Runs inside workerd (Miniflare): one fenced store per isolate, kept at module scope and shared by
// its requests, as an app keeps it.
import { Redis } from "@upstash/redis/cloudflare";
import { createFencedStore, type FencedStore } from "../../../src/index.ts";

interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  PREFIX: string;
}

let store: FencedStore | undefined;

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false });
    store ??= createFencedStore({ redis, prefix: env.PREFIX });
    const url = new URL(request.url);
    const fence = Number(url.searchParams.get("fence"));
    // Starts a write and answers at once: the runtime cancels what a request leaves running.
    if (url.pathname === "/abandon") {
      store.write("doc", "abandoned", fence).catch(() => undefined);
      return new Response("left");
    }
    await store.write("doc", "written", fence);
    return Response.json(await store.read("doc"));
  },
};
