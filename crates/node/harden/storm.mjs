// Shutdown storm (`cargo xtask harden --only storms`): 4 worker_threads inside native calls, with
// callbacks in flight, when the main thread terminates them (`--mode terminate`, then the process
// must keep working and end by itself, exit code 0) or calls `process.exit(7)` (`--mode exit`).
//
// Worker 0 is inside a native loop calling it back (`testing.call_times`); worker 1 inside a
// callback that sleeps in native code; worker 2 awaits native threads calling it back
// (`call_in_thread.callAsync`) while a detached native thread calls one of its callbacks every
// millisecond (`testing.call_in_background`: after the worker is gone each call must fail with a
// clear error, which it prints to stderr); worker 3 alternates async native sleeps and calls. The
// main thread keeps native threads calling it back too. Once every worker has called back at
// least once the script waits a random few milliseconds, prints `storm: 4 workers inside native
// calls` and does what the mode says. The harden part checks the exit code, that nothing crashed
// or hung, and counts the refused calls.
//
// Usage: node --expose-gc harden/storm.mjs --mode terminate|exit --seed N
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

process.env.RUST_LIB_BACKTRACE ??= '0';
const tether = await import('../index.mjs');

const testing = tether.namespace('testing');
const FOREVER = 1e12;
const WORKERS = 4;
// Leaf calls only: a constructor is a synchronous native call, during which a native thread's
// callback into the same worker is refused (it would deadlock).
const pair = (i) => testing.make_pair(i, testing.make_pair(i, 'a string longer than seven bytes'));

if (!isMainThread) {
  let told = false;
  const inside = () => {
    if (!told) {
      told = true;
      parentPort.postMessage('inside');
    }
  };
  switch (workerData.kind) {
    case 0:
      testing.call_times(() => {
        inside();
        return pair(0);
      }, FOREVER);
      break;
    case 1:
      testing.call(() => {
        for (;;) {
          inside();
          testing.sleep_ms(1);
          testing.echo([pair(1), pair(1)]);
        }
      });
      break;
    case 2:
      await testing.call_in_background.callAsync(() => pair(2), FOREVER, 1);
      for (;;) {
        await testing.call_in_thread.callAsync(() => {
          inside();
          return pair(2);
        });
      }
    default:
      for (;;) {
        await testing.sleep_ms.callAsync(2);
        inside();
        testing.echo([pair(3), { key: pair(3) }]);
      }
  }
} else {
  const { values: opts } = parseArgs({
    options: { mode: { type: 'string' }, seed: { type: 'string', default: '1' } },
  });
  if (!['terminate', 'exit'].includes(opts.mode)) throw new Error('--mode terminate|exit');
  let seed = Number(opts.seed) >>> 0 || 1;
  const random = () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const self = new URL(import.meta.url);
  const workers = [];
  const allInside = new Promise((resolve) => {
    let count = 0;
    for (let kind = 0; kind < WORKERS; kind++) {
      const w = new Worker(self, { workerData: { kind } });
      w.on('message', () => {
        if (++count === WORKERS) resolve();
      });
      w.on('error', (e) => console.log(`finding: worker ${kind} failed: ${e?.stack ?? e}`));
      workers.push(w);
    }
  });
  let running = true;
  const mainCalls = (async () => {
    while (running) await testing.call_in_thread.callAsync(() => pair(9));
  })();
  const timeout = setTimeout(() => {
    console.log('finding: the workers never all called back');
    process.exit(2);
  }, 60_000);
  await allInside;
  clearTimeout(timeout);
  await new Promise((resolve) => setTimeout(resolve, random() * 30));
  console.log(`storm: ${WORKERS} workers inside native calls`);
  if (opts.mode === 'exit') process.exit(7);
  await Promise.all(workers.map((w) => w.terminate()));
  running = false;
  await mainCalls;
  // The process keeps working: in this thread and in a new worker.
  if (testing.make_pair(1, 2).first !== 1) console.log('finding: a call after the storm failed');
  const again = new Worker('require("node:worker_threads").parentPort.postMessage(require(process.argv[2]).namespace("testing").add(2, 3))', {
    eval: true,
    argv: [new URL('../index.js', import.meta.url).pathname],
  });
  const five = await new Promise((resolve, reject) => {
    again.on('message', resolve);
    again.on('error', reject);
  });
  if (five !== 5) console.log(`finding: a new worker's call gave ${five}`);
  console.log('storm: terminated, the process keeps working');
}
