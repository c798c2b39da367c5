// RFC 9457 problem documents: how fencelock's HTTP helpers answer refusals.
import { checkName } from "../../core/keys.ts";

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

/**
 * The lock or resource name a request asks for, from the app's name function. One the request
 * made unusable (empty, too long) is the client's to fix: a 400 problem. No string at all (a
 * route without that parameter, an async function) is the app's mistake: thrown, a 500.
 */
export function requestedName(name: unknown, what: string): string | Problem {
  try {
    return checkName(name, what);
  } catch (error) {
    if (typeof name !== "string") throw error;
    return badNameProblem(error as Error);
  }
}

/** The 400 for a name the request made unusable, saying why. */
export function badNameProblem(error: Error): Problem {
  return { type: "urn:fencelock:problem:bad-name", title: "Unusable name", status: 400, detail: error.message };
}
