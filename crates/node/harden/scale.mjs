// Scale (`cargo xtask harden --only scale`): `--objects` live objects made and dropped on the main
// thread, then `--threads` worker_threads each making and dropping `--per-thread` objects at once
// (every one returned through `testing.echo`, which must give back the same wrapper; every 16th
// stashed natively, so another worker takes it and drops it), ending with `testing.live_objects()`
// back at its baseline once the workers are gone. Prints `figure: KEY = VALUE` lines and one
// `finding: ...` line per finding.
//
// Usage: node --expose-gc harden/scale.mjs --objects N --threads T --per-thread M
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

process.env.RUST_LIB_BACKTRACE ??= '0';
const tether = await import('../index.mjs');

const testing = tether.namespace('testing');
const { Pair } = testing;

if (!isMainThread) {
  const { k, perThread } = workerData;
  let wrong = 0;
  for (let i = 0; i < perThread; i++) {
    const p = new Pair(i, new Pair(k, null));
    if (testing.echo(p) !== p) wrong++;
    if (i % 16 === 0) {
      testing.stash(`scale-${k}-${(i / 16) % 4}`, p); // replaced, and so dropped, by the next
      try {
        testing.take(`scale-${(k + 1) % workerData.threads}-${(i / 16 + 1) % 4}`); // another worker's
      } catch {
        // nothing stashed there now
      }
    }
    if (i % 4096 === 0) global.gc();
  }
  parentPort.postMessage(wrong);
} else {
  const { values: opts } = parseArgs({
    options: { objects: { type: 'string' }, threads: { type: 'string' }, 'per-thread': { type: 'string' } },
  });
  const [objects, threads, perThread] = [opts.objects, opts.threads, opts['per-thread']].map(Number);
  const findings = [];
  const settle = async (target, rounds = 400) => {
    for (let i = 0; i < rounds && testing.live_objects() !== target; i++) {
      global.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return testing.live_objects();
  };
  const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
  for (let i = 0; i < 4; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const base = testing.live_objects();

  let started = performance.now();
  let made = new Array(objects);
  for (let i = 0; i < objects; i++) made[i] = new Pair(i, null);
  const madeIn = performance.now() - started;
  const peak = testing.live_objects() - base;
  if (peak < objects) findings.push(`${objects} objects made but live_objects() grew by ${peak}`);
  if ([0, objects >> 1, objects - 1].some((i) => made[i].first !== i)) findings.push("an object's field reads back wrong");
  started = performance.now();
  made = null;
  const afterDrop = (await settle(base)) - base;
  const droppedIn = performance.now() - started;
  if (afterDrop !== 0) findings.push(`after dropping every object live_objects() is ${afterDrop} from its baseline`);

  started = performance.now();
  const results = await Promise.all(
    Array.from({ length: threads }, (_, k) => new Promise((resolve) => {
      const w = new Worker(new URL(import.meta.url), { workerData: { k, perThread, threads } });
      w.on('message', (wrong) => resolve(wrong));
      w.on('error', (e) => resolve(`failed: ${e?.stack ?? e}`));
    })),
  );
  const stormIn = performance.now() - started;
  results.forEach((r, k) => {
    if (r !== 0) findings.push(`worker ${k}: ${typeof r === 'number' ? `${r} echoes returned another wrapper` : r}`);
  });
  testing.stash_clear();
  const afterStorm = (await settle(base)) - base;
  if (afterStorm !== 0) findings.push(`after the storm live_objects() is ${afterStorm} from its baseline`);
  for (const [key, value] of [
    ['live objects', objects],
    ['made in', seconds(madeIn)],
    ['dropped in', seconds(droppedIn)],
    ['storm threads', `${threads} workers`],
    ['objects per thread', 2 * perThread],
    ['storm', seconds(stormIn)],
    ['live objects after', `${afterStorm >= 0 ? '+' : ''}${afterStorm}`],
  ]) {
    console.log(`figure: ${key} = ${value}`);
  }
  for (const f of findings) console.log(`finding: ${f}`);
}
