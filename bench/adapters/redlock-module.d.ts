// redlock 5.0.0-beta.2 ships dist/index.d.ts but its package.json "exports" names no types,
// so TypeScript's bundler resolution cannot find them. The part the benchmark uses:
declare module "redlock" {
  import type { EventEmitter } from "node:events";
  import type { Redis } from "ioredis";

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }
  export class ExecutionError extends Error {}
  export class Lock {
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }
  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<Redis>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
  }
}
