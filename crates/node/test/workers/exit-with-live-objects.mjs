// T40: exit with tied objects, stashed objects, a worker env that held wrappers, and frees
// pending on foreign threads. The parent checks for exit code 0.
import { Worker } from 'node:worker_threads';
import * as tether from '../../index.mjs';

const testing = tether.namespace('testing');

const keep = [];
for (let i = 0; i < 100; i++) keep.push(new testing.Pair(i, testing.make_pair(i, null)));
testing.stash('T40-object', testing.make_array(10));
testing.stash('T40-callback', (x) => x);
testing.stash('T40-pair', keep[0]);
testing.drop_in_thread(testing.make_pair(1, 2));
// A callback stashed natively, its env still alive at exit.
globalThis.keep = keep;

const worker = new Worker(
  `const tether = require(${JSON.stringify(new URL('../../index.js', import.meta.url).pathname)});
   const testing = tether.namespace('testing');
   globalThis.held = [testing.take('T40-object'), (x) => x];
   testing.stash('T40-from-worker', globalThis.held[1]);
   testing.stash('T40-object', globalThis.held[0]);`,
  { eval: true },
);
await new Promise((resolve, reject) => {
  worker.on('exit', resolve);
  worker.on('error', reject);
});
// The worker's env is gone; its stashed callback must fail cleanly, not crash.
let failedCleanly = false;
try {
  testing.call(testing.take('T40-from-worker'), 1);
} catch (e) {
  failedCleanly = e instanceof tether.TetherError;
}
if (!failedCleanly) throw new Error('calling a callback of a dead env did not raise a TetherError');
console.log(`exiting with ${testing.live_objects()} live objects`);
