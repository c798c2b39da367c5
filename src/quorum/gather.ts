// Asking every node at once, and deciding as soon as the answers so far settle the question.
import { QuorumUnavailableError } from "../core/errors.ts";

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

/** Settles once the replies that pass `yes` are a majority, or the other answers (failures too) leave too few for one. */
export function vote<T>(yes: (reply: T) => boolean) {
  return (answers: readonly Answer<T>[]) => {
    const majority = majorityOf(answers.length);
    const ayes = count(answers, yes);
    return ayes >= majority || answers.filter(Boolean).length - ayes > answers.length - majority;
  };
}

/** Counts the answers that are replies and pass `test`. */
export function count<T>(answers: readonly Answer<T>[], test: (reply: T) => boolean = () => true): number {
  return answers.filter((a) => a && "reply" in a && test(a.reply)).length;
}

/** QuorumUnavailableError for `what`, from every node's answer: who answered, and why the others did not. */
export function unavailable<T>(what: string, answers: readonly Answer<T>[], granted: number) {
  return new QuorumUnavailableError(what, answers.length, count(answers), granted, failuresOf(answers));
}

/** Why each node that gave no reply did not; `nodes` numbers the answers when they are not all nodes'. */
export function failuresOf<T>(answers: readonly Answer<T>[], nodes = answers.map((_, i) => i)): string[] {
  return answers.flatMap((a, i) =>
    !a ? [`Node ${nodes[i]} did not answer in time.`] : "error" in a ? [`Node ${nodes[i]}: ${messageOf(a.error)}`] : [],
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
