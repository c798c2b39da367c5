// Asking every node at once, and deciding as soon as the answers so far settle the question.
import { LockConfigError, QuorumUnavailableError } from "../core/errors.ts";

/** One node's answer: its reply, or why it gave none (undefined while it has not answered). */
export type Answer<T> = { readonly reply: T } | { readonly error: unknown } | undefined;

/** The smallest number of nodes that is more than half of `nodes`. */
export function majorityOf(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * Resolves with the nodes' answers so far, in node order, as soon as `settled(answers)` is true or
 * every node has answered. Slower calls go on (each bounded by its node's timeoutMs) and change
 * nothing the caller holds.
 */
export function gather<T>(calls: readonly Promise<T>[], settled: (answers: readonly Answer<T>[]) => boolean) {
  return new Promise<Answer<T>[]>((resolve) => {
    const answers: Answer<T>[] = Array.from({ length: calls.length });
    let pending = calls.length;
    let done = false;
    const answer = (node: number, outcome: Answer<T>) => {
      answers[node] = outcome;
      pending--;
      if (!done && (pending === 0 || settled(answers))) {
        done = true;
        resolve([...answers]);
      }
    };
    calls.forEach((call, node) => call.then((reply) => answer(node, { reply }), (error: unknown) => answer(node, { error })));
    if (!calls.length) resolve([]);
  });
}

/** How the nodes voted: replies that pass the test, other replies, and nodes with no reply (yet). */
interface Tally {
  readonly ayes: number;
  readonly noes: number;
  readonly silent: number;
}

/** The verdict of an acquire: a majority granted, a majority replied (busy), or unknown. */
export function acquireVerdict({ ayes, noes, silent }: Tally): "granted" | "busy" | "unknown" {
  const majority = majorityOf(ayes + noes + silent);
  return ayes >= majority ? "granted" : ayes + noes >= majority ? "busy" : "unknown";
}

/** The verdict of a heartbeat or release: a majority said yes, a majority can no longer say it, or unknown. */
export function leaseVerdict({ ayes, noes, silent }: Tally): "yes" | "no" | "unknown" {
  const nodes = ayes + noes + silent;
  const majority = majorityOf(nodes);
  return ayes >= majority ? "yes" : noes > nodes - majority ? "no" : "unknown";
}

/** Counts the answers so far: `yes` replies, other replies, and nodes silent or failed. */
export function tally<T>(answers: readonly Answer<T>[], yes: (reply: T) => boolean): Tally {
  const ayes = count(answers, yes);
  const noes = count(answers) - ayes;
  return { ayes, noes, silent: answers.length - ayes - noes };
}

/**
 * Settles as soon as `decide` gives the same verdict whatever the nodes still out answer, unless
 * that verdict is `unknown`: then every node's answer is awaited (each bounded by timeoutMs), so
 * that an error names only the nodes that failed.
 */
export function settleWhen<T, V>(yes: (reply: T) => boolean, decide: (tally: Tally) => V, unknown: V) {
  return (answers: readonly Answer<T>[]) => {
    const { ayes, noes, silent } = tally(answers, yes);
    const out = answers.filter((a) => !a).length;
    const verdict = decide({ ayes: ayes + out, noes, silent: silent - out });
    return verdict !== unknown && verdict === decide({ ayes, noes: noes + out, silent: silent - out }) && verdict === decide({ ayes, noes, silent });
  };
}

/** Counts the answers that are replies and pass `test`. */
export function count<T>(answers: readonly Answer<T>[], test: (reply: T) => boolean = () => true): number {
  return answers.filter((a) => a && "reply" in a && test(a.reply)).length;
}

/**
 * QuorumUnavailableError for `what`, from every node's answer: who replied, and why the others did
 * not. A LockConfigError when every node without a reply is misconfigured: no retry would help.
 */
export function unavailable<T>(what: string, answers: readonly Answer<T>[], granted: number) {
  const failures = failuresOf(answers);
  if (answers.every((a) => a && (!("error" in a) || a.error instanceof LockConfigError))) return new LockConfigError("quorum nodes", failures);
  return new QuorumUnavailableError(what, answers.length, count(answers), granted, failures);
}

/** Why each node that gave no reply did not; `nodes` numbers the answers when they are not all nodes'. */
export function failuresOf<T>(answers: readonly Answer<T>[], nodes = answers.map((_, i) => i)): string[] {
  return answers.flatMap((a, i) =>
    // Named as the option has it: "Node 1" read as the first client given.
    !a ? [`redis[${nodes[i]}] did not answer in time.`] : "error" in a ? [`redis[${nodes[i]}]: ${messageOf(a.error)}`] : [],
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
