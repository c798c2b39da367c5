import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createLocks, type RedisClient } from "../../../src/index.ts";
import { scriptSha1 } from "../../../src/redis/run-script.ts";
import * as scripts from "../../../src/redis/scripts.gen.ts";
import { guardFetch } from "../../../src/edge/guard-fetch.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { countingAcquires } from "../../support/counting-client.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix, upstash } from "../../support/upstash.ts";

describe("guardFetch", () => {
  it('with wake: "push", a waiting request is handed the lock by the release, with no attempt after it', async () => {
    const prefix = uniquePrefix("guard-push");
    const holder = await createLocks({ redis: upstash(), prefix }).acquire("report");
    const { client, attempts } = await countingAcquires();
    const locks = createLocks({ redis: client, prefix });
    const handler = guardFetch(
      { locks: () => locks, name: () => "report", waitMs: 5_000, wake: "push" },
      (_request, _env, _ctx, lease) => Response.json({ fence: lease.fence }),
    );
    const response = handler(new Request("http://localhost/report"), {}, { waitUntil: () => undefined });
    // The first attempt, and the one after the stream confirmed; the next would be a second later.
    await until(async () => attempts.n === 2, 3_000);
    await holder.release();
    const { fence } = (await (await response).json()) as { fence: number };
    expect(fence).toBeGreaterThan(holder.fence);
    expect(attempts.n).toBe(2);
    expect((await locks.inspect("report")).held).toBe(false);
  });

  // As lockGuard: the options it checked, not a second read (a getter can answer differently).
  it("calls the name function it checked, not a second read of the option", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-fetch-options-name") });
    let reads = 0;
    const options = { locks: () => locks, get name() {
      return reads++ === 0 ? () => "job" : "job";
    } };
    const handler = guardFetch(options as never, () => new Response("ran"));
    const response = await handler(new Request("http://localhost/run"), {}, { waitUntil: () => undefined });
    expect([response.status, await response.text()]).toEqual([200, "ran"]);
  });

  it("answers 400 to an empty name from the request, as lockGuard does", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-fetch-empty") });
    const handler = guardFetch({ locks: () => locks, name: (request) => new URL(request.url).searchParams.get("job") ?? "" }, () =>
      new Response("ran"));
    const response = await handler(new Request("http://localhost/run?job="), {}, { waitUntil: () => undefined });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ title: "Unusable name", detail: expect.stringMatching(/must not be empty/) });
  });

  it("holds the lock until a streamed body has been sent, and keeps the lease's signal live meanwhile", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-body") });
    const pending: Promise<unknown>[] = [];
    const handler = guardFetch({ locks: () => locks, name: () => "report" }, (_request, _env, _ctx, lease) =>
      new Response(new ReadableStream<Uint8Array>({
        async pull(controller) {
          await sleep(300); // still producing the body after the handler returned
          if (lease.signal.aborted) controller.error(lease.signal.reason);
          else controller.enqueue(new TextEncoder().encode(`fence ${lease.fence}`)), controller.close();
        },
      })));
    const ctx = { waitUntil: (work: Promise<unknown>) => void pending.push(work) };
    const response = await handler(new Request("http://localhost/report"), {}, ctx);
    expect((await locks.inspect("report")).held).toBe(true);
    expect((await handler(new Request("http://localhost/report"), {}, ctx)).status).toBe(423);
    expect(await response.text()).toMatch(/^fence \d+$/);
    await Promise.all(pending); // the release, handed to waitUntil so the isolate lives until it is done
    expect((await locks.inspect("report")).held).toBe(false);
  });

  it('with release: "await", a client that reads a Content-Length body and asks again finds the lock free', async () => {
    // Redis a little slow to answer a release, as Upstash from another region is.
    const real = upstash();
    const releaseSha1 = scriptSha1(scripts.release);
    const slowRelease: RedisClient = {
      evalsha: async (sha, keys, args) => (sha === releaseSha1 && (await sleep(200)), real.evalsha(sha, keys, args)),
      eval: async (text, keys, args) => (text === scripts.release.text && (await sleep(200)), real.eval(text, keys, args)),
      subscribe: (channel) => real.subscribe(channel),
    };
    const locks = createLocks({ redis: slowRelease, prefix: uniquePrefix("guard-last-byte") });
    const handler = guardFetch({ locks: () => locks, name: () => "report" }, (_request, _env, _ctx, lease) => {
      const body = `fence ${lease.fence}`;
      return new Response(body, { headers: { "Content-Length": String(body.length) } });
    });
    // A plain Node adapter: the status, the headers, then the body's chunks as they come.
    const server = createServer(async (req, res) => {
      const response = await handler(new Request(`http://localhost${req.url}`, { method: req.method }), {}, { waitUntil: () => undefined });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      const reader = response.body?.getReader();
      for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) res.write(chunk.value);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;
    try {
      const first = await fetch(url, { method: "POST" });
      expect(await first.text()).toMatch(/^fence \d+$/);
      const second = await fetch(url, { method: "POST" });
      await second.text();
      expect(second.status).toBe(200);
    } finally {
      await sleep(300);
      server.close();
    }
  });

  it("lets the lock go when the handler returns a Response whose body cannot be read (a Response returned twice)", async () => {
    const locks = createLocks({ redis: upstash(), prefix: uniquePrefix("guard-reused") });
    const cached = new Response("static report");
    const handler = guardFetch({ locks: () => locks, name: () => "report" }, () => cached);
    const ctx = { waitUntil: () => undefined };
    expect(await (await handler(new Request("http://localhost/report"), {}, ctx)).text()).toBe("static report");
    await expect(handler(new Request("http://localhost/report"), {}, ctx)).rejects.toThrow(/locked/);
    expect((await locks.inspect("report")).held).toBe(false);
  });
});
