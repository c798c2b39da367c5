// The errors of the local server and the redis-server launcher, each with a stable `code`.
/** Base class of every error the local server and the redis-server launcher throw. */
export class LocalUpstashError extends Error {
  override name = "LocalUpstashError";
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

export const INSTALL_HINT =
  "Install Redis (Debian/Ubuntu: `sudo apt-get install -y redis-server`, macOS: `brew install redis`), " +
  "set REDIS_SERVER_BIN to the redis-server binary, or pass a Redis URL (redisUrl / --redis-url).";

export class RedisServerNotFoundError extends LocalUpstashError {
  override name = "RedisServerNotFoundError";

  constructor(searched: string) {
    super("REDIS_SERVER_NOT_FOUND", `redis-server not found (${searched}). ${INSTALL_HINT}`);
  }
}

export class RedisServerStartError extends LocalUpstashError {
  override name = "RedisServerStartError";

  constructor(message: string, options?: ErrorOptions) {
    super("REDIS_SERVER_START_FAILED", message, options);
  }
}

/** Redis cannot be reached: at startup, or for a request during an outage (HTTP 503). */
export class RedisUnavailableError extends LocalUpstashError {
  override name = "RedisUnavailableError";

  constructor(message: string, options?: ErrorOptions) {
    super("REDIS_UNAVAILABLE", message, options);
  }
}

/**
 * The Redis behind --redis-url is a Redis Cluster node. One connection reaches only the slots that
 * node serves: every other key would fail with MOVED, so the server refuses to start.
 */
export class RedisClusterError extends LocalUpstashError {
  override name = "RedisClusterError";

  constructor(where: string) {
    super(
      "REDIS_CLUSTER",
      `Redis at ${where} is a Redis Cluster node (cluster_enabled:1). The local server speaks to one Redis, ` +
        "and would fail every key whose slot another node serves (MOVED). Point --redis-url (redisUrl) at a " +
        "standalone Redis; for a Node service on a Cluster, use fencelock/ioredis (fromIoredis(new Cluster([...]))) " +
        "or fencelock/node-redis (fromNodeRedis(createCluster({ rootNodes: [...] }))) instead of the local server.",
    );
  }
}

/** The Redis behind --redis-url is a Sentinel, which holds no data and runs no scripts. */
export class RedisSentinelError extends LocalUpstashError {
  override name = "RedisSentinelError";

  constructor(where: string) {
    super(
      "REDIS_SENTINEL",
      `Redis at ${where} is a Sentinel (redis_mode:sentinel), which holds no data. Point --redis-url (redisUrl) at ` +
        "the primary it watches (redis-cli -h <host> -p <port> SENTINEL GET-MASTER-ADDR-BY-NAME <name>); for a Node " +
        "service that follows failovers, use fencelock/ioredis (fromIoredis(new Redis({ sentinels, name }))) instead.",
    );
  }
}

/** A request the REST protocol refuses; `status` is the HTTP status sent back. */
export class HttpError extends LocalUpstashError {
  override name = "HttpError";
  readonly status: number;

  constructor(status: number, message: string) {
    super(`HTTP_${status}`, message);
    this.status = status;
  }
}
