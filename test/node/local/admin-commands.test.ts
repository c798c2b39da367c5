// Admin commands (CONFIG, DEBUG, SHUTDOWN...) are refused unless allowAdminCommands, on every endpoint and in Lua.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalUpstash, startRedisServer, type LocalUpstash, type RedisServer } from "../../../src/local/index.ts";
import { key, rest, type RestRequest } from "../../support/rest.ts";

const REFUSED = new RegExp("^ERR '[a-z -]+' is refused by the local Upstash server: .+; allow admin commands with " +
  "startLocalUpstash\\(\\{ allowAdminCommands: true \\}\\) or `fencelock dev --allow-admin-commands`$");

let local: LocalUpstash;
let permissive: LocalUpstash;
beforeAll(async () => {
  [local, permissive] = await Promise.all([startLocalUpstash(), startLocalUpstash({ allowAdminCommands: true })]);
});
afterAll(() => Promise.all([local.close(), permissive.close()]));

const on = (server: LocalUpstash, request: RestRequest = {}): RestRequest => ({ url: server.url, token: server.token, ...request });

const ADMIN_COMMANDS = [
  ["CONFIG", "SET", "protected-mode", "no"], ["Config", "set", "bind", "0.0.0.0"], ["CONFIG", "GET", "requirepass"],
  ["DEBUG", "SLEEP", "0"], ["SHUTDOWN", "NOSAVE"], ["REPLICAOF", "127.0.0.1", "1"], ["SLAVEOF", "127.0.0.1", "1"],
  ["ACL", "SETUSER", "intruder", "on", ">x", "+@all"], ["MIGRATE", "127.0.0.1", "1", "k", "0", "100"],
  ["MODULE", "LOAD", "/tmp/x.so"], ["SAVE"], ["BGSAVE"], ["BGREWRITEAOF"], ["FAILOVER"], ["SWAPDB", "0", "1"],
  ["CLIENT", "KILL", "TYPE", "normal"], ["CLIENT", "PAUSE", "60000"], ["CLUSTER", "MEET", "127.0.0.1", "1"],
  ["SLOWLOG", "RESET"], ["LATENCY", "RESET"],
];

describe("by default, the local server", () => {
  const cases = ADMIN_COMMANDS.map((command) => [command.join(" "), command] as const);
  it.each(cases)("refuses %s with a 400 that says how to allow it, and keeps serving", async (_, command) => {
    const { status, json } = await rest("/", on(local, { body: command }));
    expect({ status, json }).toEqual({ status: 400, json: { error: expect.stringMatching(REFUSED) } });
    expect((await rest("/", on(local, { body: ["PING"] }))).json).toEqual({ result: "PONG" });
  });

  it("refuses them inside a pipeline (that entry only) and a transaction (all of it)", async () => {
    const pipeline = await rest("/pipeline", on(local, { body: [["PING"], ["CONFIG", "SET", "protected-mode", "no"], ["PING"]] }));
    expect(pipeline.json).toEqual([{ result: "PONG" }, { error: expect.stringMatching(REFUSED) }, { result: "PONG" }]);
    const k = key("admin-multi");
    const transaction = await rest("/multi-exec", on(local, { body: [["SET", k, "v"], ["DEBUG", "SLEEP", "0"]] }));
    expect(transaction).toMatchObject({ status: 400, json: { error: expect.stringMatching(REFUSED) } });
    expect((await rest("/", on(local, { body: ["EXISTS", k] }))).json).toEqual({ result: 0 });
  });

  it("refuses them in the path form", async () => {
    for (const [path, method] of [["/config/set/protected-mode/no", "GET"], ["/CONFIG/SET/bind", "POST"], ["/shutdown", "GET"]] as const) {
      const { status, json } = await rest(path, on(local, { method, ...(method === "POST" ? { body: "0.0.0.0" } : {}) }));
      expect({ status, json }).toEqual({ status: 400, json: { error: expect.stringMatching(REFUSED) } });
    }
  });

  it("still runs the read-only ones: CLIENT LIST, LASTSAVE, ROLE, SLOWLOG GET, INFO", async () => {
    for (const command of [["CLIENT", "LIST"], ["LASTSAVE"], ["ROLE"], ["SLOWLOG", "GET"], ["INFO", "server"]]) {
      expect(await rest("/", on(local, { body: command }))).toMatchObject({ status: 200, json: { result: expect.anything() } });
    }
  });

  // A script's commands never reach the policy: Redis refuses admin ones in Lua, and the private
  // redis-server's user is denied MIGRATE and SWAPDB, which Lua may call.
  it("lets no script (EVAL or FCALL) reconfigure Redis or copy keys to another server", async () => {
    const target: RedisServer = await startRedisServer();
    try {
      const config = await rest("/", on(local, { body: ["EVAL", "return redis.call('CONFIG','SET','protected-mode','no')", 0] }));
      expect(config.json).toEqual({ error: expect.stringMatching(/not allowed from script/) });
      const k = key("migrate");
      const migrate = "redis.call('SET', KEYS[1], 'secret') return redis.call('MIGRATE', '127.0.0.1', ARGV[1], KEYS[1], 0, 1000)";
      const evaluated = await rest("/", on(local, { body: ["EVAL", migrate, 1, k, target.port] }));
      expect(evaluated.json).toEqual({ error: expect.stringMatching(/can't run this command/) });
      const library = `#!lua name=${key("lib").replace(/\W/g, "")}\nredis.register_function('swap', function() return redis.call('SWAPDB', 0, 1) end)`;
      await rest("/", on(local, { body: ["FUNCTION", "LOAD", library] }));
      expect((await rest("/", on(local, { body: ["FCALL", "swap", 0] }))).json).toEqual({ error: expect.stringMatching(/can't run this command/) });
      const copied = new Redis(target.url);
      expect(await copied.exists(k)).toBe(0);
      copied.disconnect();
    } finally {
      await target.stop();
    }
  });

  it("starts a redis-server that needs its password, and whose user cannot CONFIG SET even when reached directly", async () => {
    expect(local.redisUrl).toMatch(/^redis:\/\/:[\w-]{32}@127\.0\.0\.1:\d+$/);
    const anonymous = new Redis(local.redisUrl.replace(/:[\w-]+@/, ""), { maxRetriesPerRequest: 0 });
    anonymous.on("error", () => {}); // its ready check is refused too
    const direct = new Redis(local.redisUrl);
    try {
      await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
      await expect(direct.config("SET", "protected-mode", "no")).rejects.toThrow(/NOPERM/);
      expect(await direct.ping()).toBe("PONG");
    } finally {
      anonymous.disconnect();
      direct.disconnect();
    }
  });
});

describe("with allowAdminCommands: true", () => {
  it("runs them on every endpoint, and DEBUG too, while protected mode stays on", async () => {
    expect((await rest("/", on(permissive, { body: ["CONFIG", "GET", "protected-mode"] }))).json).toEqual({ result: ["protected-mode", "yes"] });
    expect((await rest("/", on(permissive, { body: ["DEBUG", "SLEEP", "0"] }))).json).toEqual({ result: "OK" });
    const pipeline = await rest("/pipeline", on(permissive, { body: [["CONFIG", "SET", "slowlog-max-len", "64"], ["SLOWLOG", "RESET"]] }));
    expect(pipeline.json).toEqual([{ result: "OK" }, { result: "OK" }]);
    const transaction = await rest("/multi-exec", on(permissive, { body: [["CONFIG", "GET", "slowlog-max-len"]] }));
    expect(transaction.json).toEqual([{ result: ["slowlog-max-len", "64"] }]);
    expect((await rest("/config/get/enable-module-command", on(permissive))).json).toEqual({ result: ["enable-module-command", "no"] });
  });

  it("still refuses what REST cannot serve", async () => {
    const { status, json } = await rest("/", on(permissive, { body: ["MONITOR"] }));
    expect({ status, json }).toEqual({ status: 400, json: { error: expect.stringMatching(/is not supported by the local Upstash server/) } });
  });
});
