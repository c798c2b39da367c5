// Run by push.test.ts as a process of its own: a push wait through fromIoredis, then the client is
// quit. The process must then exit by itself, so the adapter has left nothing open.
import { Redis } from "ioredis";
import { createLocks } from "../../../../src/index.ts";
import { fromIoredis } from "../../../../src/ioredis.ts";

const client = new Redis(process.argv[2]!);
const redis = fromIoredis(client);
const prefix = `exit-${process.pid}`;
const holder = await createLocks({ redis, prefix }).acquire("gate");
setTimeout(() => void holder.release(), 200);
const lease = await createLocks({ redis, prefix }).acquire("gate", { waitMs: 5_000 });
await lease.release();
await client.quit();
console.log(`released ${lease.fence > holder.fence} ${performance.now()}`);
