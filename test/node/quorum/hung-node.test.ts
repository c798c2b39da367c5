// A node that stops answering without closing its connections (a paused process, a silent
// partition): requests to it pile up in its client until it answers, and the quorum goes on
// without it, unseen. Past a bound, nothing more is sent to it until one of them ends.
import { expect, it, vi } from "vitest";
import { createLocks, type RedisClient } from "../../../src/index.ts";
import { sleep } from "../../../src/waiting/backoff.ts";
import { nodesPerTest } from "../../support/quorum/nodes.ts";
import { until } from "../../support/until.ts";
import { uniquePrefix } from "../../support/upstash.ts";

const nodes = nodesPerTest();

it("sends a hung node nothing more once 100 requests to it are out past timeoutMs, says so once, and uses it again once it answers", async () => {
  const rig = await nodes(3);
  const hung = rig.clients[2]!;
  let sentToHung = 0;
  const counted: RedisClient = {
    evalsha: (sha, keys, args) => (sentToHung++, hung.evalsha(sha, keys, args)),
    eval: (text, keys, args) => (sentToHung++, hung.eval(text, keys, args)),
  };
  const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  try {
    const locks = createLocks({ redis: [rig.clients[0]!, rig.clients[1]!, counted], prefix: uniquePrefix("hung"), timeoutMs: 100 });
    await (await locks.acquire("warm")).release();
    rig.stop(2);
    // Each cycle sends the hung node an acquire, a give-back and a release; all time out.
    for (let i = 0; i < 80; i++) await (await locks.acquire(`job-${i % 4}`)).release();
    await sleep(300); // every request sent so far is past timeoutMs
    const sent = sentToHung;
    for (let i = 0; i < 40; i++) await (await locks.acquire(`job-${i % 4}`)).release();
    expect(sentToHung).toBe(sent);
    expect(warn.mock.calls.map(String).filter((call) => call.includes("redis[2]"))).toEqual([
      expect.stringMatching(/redis\[2\].*100 requests.*unanswered/),
    ]);
    // Resumed, it answers what it was sent, and is used again.
    rig.cont(2);
    await until(async () => (await locks.inspect("job-0")).nodes?.[2] != null, 10_000);
    expect(sentToHung).toBeGreaterThan(sent);
  } finally {
    warn.mockRestore();
  }
});
