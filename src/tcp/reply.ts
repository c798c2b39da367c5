// Script replies from TCP clients, read as the HTTP client reads them: integers as numbers.

// At most 16 digits: every fence and TTL fits, and Number() reads it exactly when it is safe.
const INTEGER = /^-?(0|[1-9]\d{0,15})$/;

/**
 * A script's reply with integers that came back as text or bigint (ioredis with stringNumbers,
 * node-redis type mappings) turned into numbers. Safe for our scripts: the only text they answer
 * is a stored value, which always starts with "v:".
 */
export function withNumbers(reply: unknown): unknown {
  return Array.isArray(reply) ? reply.map(numberOf) : reply;
}

function numberOf(value: unknown): unknown {
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  if (typeof value === "string" && INTEGER.test(value) && Number.isSafeInteger(+value)) return +value;
  return value;
}
