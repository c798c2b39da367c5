/** A Lua script that keeps Redis busy for `ms`, then sets KEYS[1] and returns "finished". */
export function busyScript(ms: number): string {
  return "local t=redis.call('TIME') local s=t[1]*1000000+t[2] " +
    `repeat local n=redis.call('TIME') until (n[1]*1000000+n[2])-s > ${ms * 1000} ` +
    "redis.call('SET', KEYS[1], 'done') return 'finished'";
}
