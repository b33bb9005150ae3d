// T41: a worker hands a native thread its callback (testing.call_in_background, first call in
// 300 ms) and is terminated at once; the thread's call must fail with a clear error, printed
// to stderr by call_in_background, and the process must exit cleanly. The parent checks both.
import { Worker } from 'node:worker_threads';

const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   const tether = require(${JSON.stringify(new URL('../../index.js', import.meta.url).pathname)});
   const testing = tether.namespace('testing');
   testing.call_in_background(() => new testing.Pair(1, 2), 1, 300);
   parentPort.postMessage('ready');`,
  { eval: true },
);
await new Promise((resolve, reject) => {
  worker.on('message', () => worker.terminate().then(resolve, reject));
  worker.on('error', reject);
});
console.log('worker terminated');
// Long after the thread's call (300 ms after the worker started).
await new Promise((resolve) => setTimeout(resolve, 1500));
