// worker_threads body for the identity checks: fetch, drop and refetch shared native
// objects in this env; report how many fetches returned a different wrapper.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const tether = require('../../index.js');

const testing = tether.namespace('testing');

async function main() {
  const { key, rounds } = workerData;
  let mismatches = 0;
  const check = (ok) => {
    if (!ok) mismatches++;
  };
  (() => {
    const shared = testing.take(key);
    testing.stash(key, shared);
  })();
  for (let round = 0; round < rounds; round++) {
    const shared = testing.take(key);
    testing.stash(key, shared);
    check(testing.take(key) === shared);
    testing.stash(key, shared);
    const i = round % shared.length;
    const item = shared.get(i);
    check(shared.get(i) === item);
    check(testing.echo(item) === item);
    check(item.first === i);
    const callback = (x) => x;
    check(testing.call(callback, item) === item);
    check(testing.echo(callback) === callback);
    if (round % 25 === 0) check((await testing.echo.callAsync(item)) === item);
    if (round % 100 === 0 && global.gc) {
      global.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  testing.take(key);
  parentPort.postMessage({ mismatches, isMainEnv: tether.isMainEnv });
}

main().catch((e) => {
  parentPort.postMessage({ mismatches: -1, error: String(e && e.stack) });
  process.exitCode = 1;
});
