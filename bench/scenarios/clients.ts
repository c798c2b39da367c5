import type { Library, LockAdapter } from "../adapters/types.ts";
import { countedAs, RequestCounter } from "../harness/requests.ts";

/** One simulated client: its own connection and its own request counter. */
export interface Client {
  index: number;
  adapter: LockAdapter<unknown>;
  counter: RequestCounter;
}

export async function connectClients(library: Library, count: number): Promise<Client[]> {
  const clients: Client[] = [];
  try {
    for (let index = 0; index < count; index++) {
      clients.push({ index, adapter: await library.connect(), counter: new RequestCounter() });
    }
    return clients;
  } catch (error) {
    await closeClients(clients);
    throw error;
  }
}

export async function closeClients(clients: readonly Client[]): Promise<void> {
  await Promise.allSettled(clients.map((client) => client.adapter.close()));
}

/** Runs fn with the client's requests counted to it. */
export function asClient<T>(client: Client, fn: () => Promise<T>): Promise<T> {
  return countedAs(client.counter, fn);
}

/** One acquire + release per client on a name of its own: loads scripts, opens connections. */
export async function warmUp(clients: readonly Client[], rounds = 3): Promise<void> {
  await Promise.all(
    clients.map((client) =>
      asClient(client, async () => {
        for (let round = 0; round < rounds; round++) await oneCycle(client, `warm:${client.index}`);
      }),
    ),
  );
}

/** One acquire + release on `name`. */
export async function oneCycle(client: Client, name: string): Promise<void> {
  const handle = await client.adapter.acquire(name);
  await client.adapter.release(handle);
}

/** connect, warm up, run, and always close. */
export async function withClients<T>(library: Library, count: number, run: (clients: Client[]) => Promise<T>): Promise<T> {
  const clients = await connectClients(library, count);
  try {
    await warmUp(clients);
    return await run(clients);
  } finally {
    await closeClients(clients);
  }
}
