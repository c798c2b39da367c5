/** An RFC 9457 problem document, as fencelock's HTTP helpers answer errors. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

export function problemResponse(problem: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: { "Content-Type": "application/problem+json", ...headers },
  });
}

/** The problem type a fenced service answers with when a fence is stale. */
export const STALE_FENCE_PROBLEM = "urn:fencelock:problem:stale-fence";

/** The 409 for a StaleFenceError; `fencedFetch` turns it back into the error on the client. */
export function staleFenceProblem(
  error: { fence: number; highestFence: number },
  detail = `Fence ${error.fence} is stale here: fences below ${error.highestFence} are refused.`,
): Problem {
  return { type: STALE_FENCE_PROBLEM, title: "Stale fencing token", status: 409, detail,
    fence: error.fence, highestFence: error.highestFence };
}

/** The 400 for a lock or resource name that a request made unusable (too long, say). */
export function badNameProblem(error: Error): Problem {
  return { type: "urn:fencelock:problem:bad-name", title: "Unusable name", status: 400, detail: error.message };
}
