// fencedFetch on the client side: the lease's fence sent, a stale answer turned into
// StaleFenceError, and fetch's own behaviour (headers, signals, other 409s) kept.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createLocks, LockLostError, StaleFenceError } from "../../../../src/index.ts";
import { fencedFetch } from "../../../../src/http.ts";
import { withFetch } from "../../../support/fetch-wrappers.ts";
import { blobService } from "../../../support/blob-service.ts";
import { startSilentServer } from "../../../support/silent-server.ts";
import { uniquePrefix, upstash } from "../../../support/upstash.ts";

describe("fencedFetch", () => {
  // Any other 409 (a conflict page, a stream) is the caller's: fencedFetch once read it whole first.
  it("hands back a 409 that is not a stale-fence problem with its body whole, without buffering an endless one", async () => {
    const other = { type: "urn:example:conflict", title: "Already paid" };
    const endless = createServer((request, response) => {
      if (request.url === "/other") return void response.writeHead(409, { "content-type": "application/problem+json" }).end(JSON.stringify(other));
      response.writeHead(409, { "content-type": request.url === "/json" ? "application/json" : "text/html" });
      response.write(request.url === "/json" ? '{"type": "' : "<html>");
      const timer = setInterval(() => response.write("x".repeat(16 * 1024)), 5);
      response.on("close", () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(endless.address() as AddressInfo).port}`;
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-42");
    try {
      for (const path of ["/html", "/json"]) {
        const stop = new AbortController();
        const answer = fencedFetch(lease, `${base}${path}`, { signal: stop.signal });
        const late = new Promise<string>((resolve) => setTimeout(() => resolve("still reading after 2 s"), 2_000));
        const response = await Promise.race([answer, late]);
        if (typeof response === "string") throw new Error(response);
        expect({ status: response.status, url: response.url }).toEqual({ status: 409, url: `${base}${path}` });
        // The body as sent, from its first byte: what fencedFetch read to tell is put back.
        const first = await response.body?.getReader().read();
        expect(new TextDecoder().decode(first?.value)).toMatch(path === "/json" ? /^\{"type": "/ : /^<html>/);
        stop.abort(); // as a caller gives up on an endless body; no unhandled rejection may follow
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Another problem, read whole to tell, still reads whole, and so does its clone.
      const another = await fencedFetch(lease, `${base}/other`);
      const copy = another.clone();
      expect({ url: copy.url, redirected: copy.redirected }).toEqual({ url: `${base}/other`, redirected: false });
      expect([await another.json(), await copy.json()]).toEqual([other, other]);
    } finally {
      await lease.release();
      endless.closeAllConnections();
      endless.close();
    }
  });

  it("sends the lease's fence, and turns a stale answer into StaleFenceError", async () => {
    const { app, locks, store } = blobService();
    const lease = await locks.acquire("invoice-42");
    // Requests to blobs.test reach the app in-process; the store's own Redis traffic goes out as usual.
    const served: Response[] = [];
    const toApp = (real: typeof fetch): typeof fetch => async (input, init) => {
      const request = new Request(input, init);
      if (new URL(request.url).host !== "blobs.test") return real(request);
      served.push(await app.fetch(request));
      return served.at(-1) as Response;
    };
    const ok = await withFetch(toApp, () => fencedFetch(lease, "http://blobs.test/blobs/invoice-42", { method: "PUT", body: "v1" }));
    expect(ok.status).toBe(200);
    expect(await store.read("invoice-42")).toEqual({ value: "v1", fence: lease.fence });

    await store.claim("invoice-42", lease.fence + 1);
    const stale = await withFetch(toApp, () =>
      fencedFetch(lease, "http://blobs.test/blobs/invoice-42", { method: "PUT", body: "v2" }).catch((e: unknown) => e),
    );
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect(stale).toMatchObject({ fence: lease.fence, highestFence: lease.fence + 1 });
    // The 409 never reaches the caller, so its body is not left unread, holding the connection.
    expect(served.at(-1)?.bodyUsed).toBe(true);
    await lease.release();
  });

  it("keeps a Request's own headers, and lets init's headers replace them as fetch does", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-44");
    const seen: Headers[] = [];
    const record = (): typeof fetch => async (input, init) => {
      seen.push(new Request(input, init).headers);
      return new Response(null, { status: 204 });
    };
    const request = new Request("http://blobs.test/blobs/invoice-44", { method: "PUT", headers: { Authorization: "Bearer app" } });
    await withFetch(record, async () => {
      await fencedFetch(lease, request);
      await fencedFetch(lease, request, { headers: { "X-Trace": "1" } });
    });
    await lease.release();
    expect([seen[0]?.get("Authorization"), seen[0]?.get("Fencing-Token")]).toEqual(["Bearer app", String(lease.fence)]);
    expect([seen[1]?.get("Authorization"), seen[1]?.get("X-Trace"), seen[1]?.get("Fencing-Token")]).toEqual([null, "1", String(lease.fence)]);
  });

  it("aborts when the Request's own signal aborts, as fetch does, not only when the lease is lost", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-45");
    // As fetch does: the request ends when its signal aborts.
    const hang = (): typeof fetch => (input, init) => new Promise((_, reject) => {
      const { signal } = new Request(input, init);
      signal.addEventListener("abort", () => reject(signal.reason));
    });
    // `signal: undefined`, as from `{ ...options, signal: options.signal }`, gives no signal: fetch keeps the Request's.
    for (const init of [undefined, { signal: undefined }]) {
      const clientLeft = new AbortController();
      const request = new Request("http://blobs.test/blobs/invoice-45", { method: "PUT", body: "v", signal: clientLeft.signal });
      const outcome = withFetch(hang, () => fencedFetch(lease, request, init).catch((e: unknown) => e));
      clientLeft.abort(new Error("the client went away"));
      expect(await outcome).toMatchObject({ message: "the client went away" });
    }
    expect(lease.signal.aborted).toBe(false);
    await lease.release();
  });

  it("refuses what is not a Lease, such as the { name, owner, fence } record resume() takes, and sends nothing", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-46");
    const sent: Request[] = [];
    const record = (): typeof fetch => async (input, init) => (sent.push(new Request(input, init)), new Response(null, { status: 204 }));
    // Without the lease's signal the request would go on after the lease is lost.
    const notLeases = [{ name: lease.name, owner: lease.owner, fence: lease.fence }, { name: "job", fence: "1e3" }, null];
    for (const notLease of notLeases) {
      const refused = await withFetch(record, () => fencedFetch(notLease as never, "http://blobs.test/blobs/invoice-46").catch((e: unknown) => e));
      expect(refused).toMatchObject({ name: "LockConfigError", message: expect.stringMatching(/expected a Lease from acquire\(\) or resume\(\)/) });
      expect((refused as Error).message).not.toContain(lease.owner);
    }
    expect(sent).toEqual([]);
    // init null, as fetch takes it.
    await withFetch(record, () => fencedFetch(lease, "http://blobs.test/blobs/invoice-46", null));
    expect(sent[0]?.headers.get("Fencing-Token")).toBe(String(lease.fence));
    await lease.release();
  });

  it("aborts the request when the lease is gone", async () => {
    const { locks } = blobService();
    const lease = await locks.acquire("invoice-43");
    await lease.release();
    await expect(fencedFetch(lease, "http://blobs.test/never")).rejects.toThrow(/released/);
  });
  it("aborts a request that has a signal of its own too, once the lease lapses", async () => {
    const silent = await startSilentServer();
    try {
      const lease = await createLocks({ redis: upstash(), prefix: uniquePrefix("ff-signal"), leaseMs: 500 }).acquire("blob");
      const own = new AbortController(); // the caller's, never aborted
      const answer = fencedFetch(lease, `${silent.url}/blob`, { method: "PUT", body: "v", signal: own.signal }).catch((e: unknown) => e);
      const late = new Promise((resolve) => setTimeout(() => resolve("still waiting 10 s after the lease lapsed"), 10_500));
      expect(await Promise.race([answer, late])).toBeInstanceOf(LockLostError);
    } finally {
      await silent.close();
    }
  }, 20_000);
});
