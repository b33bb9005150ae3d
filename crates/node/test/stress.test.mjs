// Stress: many concurrent callAsync calls, forced GCs and refetches, in the main env and in
// worker_threads at once; every fetch keeps identity and live objects return to baseline.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

import { collect, expectLiveBackTo, settledBaseline, testing } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { Pair } = testing;

function startWorker(key, rounds) {
  return new Promise((resolve, reject) => {
    const w = new Worker(path.join(here, 'workers', 'identity.cjs'), { workerData: { key, rounds } });
    let result;
    w.on('message', (m) => {
      result = m;
    });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`worker exited with ${code}`))));
  });
}

async function churn(rounds, batch) {
  const shared = testing.make_array(32);
  testing.stash('stress-shared', shared);
  for (let round = 0; round < rounds; round++) {
    const fresh = Array.from({ length: batch }, (_, i) => new Pair(i, round));
    const item = shared.get(round % 32);
    const callback = (x) => x;
    // Launch everything first, then await: the JS thread stays free for the callbacks the
    // pool threads marshal back to it.
    const pending = [
      ...fresh.map((p) => testing.echo.callAsync(p).then((back) => assert.equal(back, p))),
      ...fresh.map((p, i) => testing.make_pair.callAsync(p, i).then((made) => {
        assert.equal(made.first, p);
        assert.equal(made.second, i);
      })),
      testing.call.callAsync(callback, item).then((back) => assert.equal(back, item)),
      testing.call_in_thread.callAsync(callback, item).then((back) => assert.equal(back, item)),
      testing.sum.callAsync([1, 2, 3.5]).then((s) => assert.equal(s, 6.5)),
      testing.raise_error.callAsync('ValueError', 'expected').then(
        () => assert.fail('should reject'),
        (e) => assert.equal(e.kind, 'ValueError'),
      ),
    ];
    await Promise.all(pending);
    assert.equal(shared.get(round % 32), item);
    assert.equal(testing.echo(callback), callback);
    if (round % 4 === 0) {
      await collect(1);
      // Refetch after the wrappers may have died.
      const again = testing.take('stress-shared');
      testing.stash('stress-shared', again);
      assert.equal(again.get(round % 32).first, round % 32);
      assert.equal(again.get(round % 32), again.get(round % 32));
    }
  }
  testing.take('stress-shared');
}

test('stress: concurrent callAsync, GCs and refetches return live objects to baseline', async () => {
  const baseline = await settledBaseline();
  await churn(60, 48);
  await expectLiveBackTo(baseline);
});

test('stress: the same identity checks inside worker_threads, concurrently with the main env', async () => {
  const baseline = await settledBaseline();
  const workers = 4;
  (() => {
    const shared = testing.make_array(8);
    for (let i = 0; i < workers; i++) testing.stash(`stress-worker-${i}`, shared);
  })();
  const results = await Promise.all([
    churn(20, 32).then(() => null),
    ...Array.from({ length: workers }, (_, i) => startWorker(`stress-worker-${i}`, 600)),
  ]);
  for (const r of results.slice(1)) {
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.mismatches, 0);
  }
  await expectLiveBackTo(baseline);
});
