type Fetch = typeof fetch;

/**
 * Replaces the global fetch (which @upstash/redis calls) for the length of `fn`, so a
 * test can count, replay or drop the real HTTP requests to the local server.
 */
export async function withFetch<T>(wrap: (real: Fetch) => Fetch, fn: () => Promise<T>): Promise<T> {
  const real = globalThis.fetch;
  globalThis.fetch = wrap(real);
  try {
    return await fn();
  } finally {
    globalThis.fetch = real;
  }
}

/** Counts requests; `count.n` is read by the test. */
export function counting(count: { n: number }) {
  return (real: Fetch): Fetch => (input, init) => {
    count.n++;
    return real(input, init);
  };
}

/** Sends every request twice and answers with the second response: a replayed request. */
export function sendingTwice(real: Fetch): Fetch {
  return async (input, init) => {
    await (await real(input, init)).text();
    return real(input, init);
  };
}

/**
 * Lets the first `times` requests reach the server and be applied, then throws as if
 * the connection dropped before the response arrived; the client retries the same body.
 */
export function droppingResponses(times: number) {
  let dropped = 0;
  return (real: Fetch): Fetch => async (input, init) => {
    const response = await real(input, init);
    if (dropped >= times) return response;
    dropped++;
    await response.text();
    throw new TypeError("fetch failed: connection reset after the request was sent");
  };
}

/**
 * Holds the first `times` responses back for `ms` each (every request is applied at once), as a
 * slow network would; by default every response.
 */
export function delayingResponses(ms: number, times = Number.POSITIVE_INFINITY) {
  let delayed = 0;
  return (real: Fetch): Fetch => async (input, init) => {
    const response = await real(input, init);
    if (delayed < times) {
      delayed++;
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
    return response;
  };
}

/**
 * Hands every read of an event-stream body to the client in two halves, as workerd's fetch does
 * (it gave "data: message,0123456789abcd" and the rest of a handover in two reads, where Node's
 * fetch gives one): an SSE reader must carry a line over from one read to the next.
 */
export function splittingEventStreams(real: Fetch): Fetch {
  return async (input, init) => {
    const response = await real(input, init);
    if (!response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        const half = Math.ceil(value.length / 2);
        controller.enqueue(value.subarray(0, half));
        if (half < value.length) controller.enqueue(value.subarray(half));
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
