// AbortSignal helpers that work across realms and in runtimes without AbortSignal.any.
/**
 * Whether `value` is an AbortSignal, by shape. Not `instanceof`: a signal can come from another
 * realm, as a Request's does in Vercel's Edge Runtime (made by Node's AbortController, not the VM's).
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof (value as AbortSignal | undefined)?.throwIfAborted == "function";
}

/**
 * A signal that aborts when any of `signals` does, with its reason. AbortSignal.any where the
 * runtime has it; Vercel's Edge Runtime does not, and there each signal's abort is passed on by a
 * listener, which stays as long as that signal does.
 */
export function anySignal(signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any == "function") return AbortSignal.any(signals);
  const joined = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      joined.abort(signal.reason);
      break;
    }
    signal.addEventListener("abort", () => joined.abort(signal.reason), { once: true });
  }
  return joined.signal;
}
