// Allocation failures (`cargo xtask harden --only faults`): rounds of
// `testing.fail_allocations(n, after)` (n from 1 to 4 allocations of the frontend allocator fail
// once `after`, from 0 to 8, have succeeded: the failure lands anywhere in the operation) followed
// by one operation that allocates: native functions, constructors, argument conversions of
// arrays, objects, Maps, strings and Buffers, callbacks (from this thread and, through callAsync,
// from a native one), fields, and operations that throw an error of their own.
//
// Per round the operation either succeeds, throws a TetherMemoryError (a RangeError) or throws the
// error it throws anyway; anything else is a finding. The failures left unused are cancelled and a
// plain call must work. At the end `testing.live_objects()` must be back within NOISE objects
// of its baseline (taken after the first rounds: V8 keeps a bounded handful of recent values
// alive; a leak grows with the rounds). Prints
// `figure: KEY = VALUE` lines and one `finding: ...` line per finding.
//
// Usage: node --expose-gc harden/faults.mjs --rounds N --seed S
import { parseArgs } from 'node:util';

process.env.RUST_LIB_BACKTRACE ??= '0';
const tether = await import('../index.mjs');

const testing = tether.namespace('testing');
const { Pair } = testing;
const LONG = 'a string longer than seven bytes';
const { values: opts } = parseArgs({ options: { rounds: { type: 'string' }, seed: { type: 'string', default: '1' } } });

let seed = Number(opts.seed) >>> 0 || 1;
const random = () => {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const pick = (items) => items[Math.floor(random() * items.length)];

class Planted extends Error {}
// The callbacks are made once: a JS function keeps its native Function's memory while it lives
// (it holds a weak reference to it), and V8 keeps a few recent closures alive for a while, so
// fresh closures per round would leave the baseline a few objects behind for no fault of tether.
const pairUp = (x) => [x, LONG];
const plant = () => {
  throw new Planted('planted');
};
const mapped = () => ({ k: [1, LONG] });
const operations = [
  ['make_pair', () => testing.make_pair(1, 2)],
  ['constructor', () => new Pair(1, new Pair(2, LONG))],
  ['make_array', () => [...testing.make_array(5)]],
  ['array argument', () => testing.echo([1, LONG, [2, 3]])],
  ['object argument', () => testing.echo({ key: [1, 2], other: LONG })],
  ['Map argument', () => testing.echo(new Map([[LONG, [1]]]))],
  ['Buffer argument', () => testing.echo(Buffer.alloc(64, 1))],
  ['make_map', () => testing.make_map(['a', LONG], [1, [2]])],
  ['callback', () => testing.call(pairUp, 5)],
  ['callback that throws', () => testing.call(plant), Planted],
  ['stash and take', () => { testing.stash('faults', [1, LONG]); return testing.take('faults'); }, tether.TetherKeyError],
  ['field set', () => { const p = new Pair(1, 2); p.first = [1, LONG]; return p.first; }],
  ['wrong argument', () => testing.add(1, 'x'), tether.TetherTypeError],
  ['raise_error', () => testing.raise_error('KeyError', LONG), tether.TetherKeyError],
];
const asyncOperations = [
  ['callback on a native thread', () => testing.call_in_thread.callAsync(mapped)],
  ['callAsync', () => testing.make_array.callAsync(3)],
];

async function settle(rounds = 100, target = undefined) {
  let last = -1;
  for (let i = 0; i < rounds; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
    const now = testing.live_objects();
    if (now === target || (target === undefined && now === last)) return now;
    last = now;
  }
  return testing.live_objects();
}

const findings = [];
const counts = { memory: 0, own: 0, completed: 0, used: 0 };
function outcome(name, allowed, e) {
  if (e === undefined) counts.completed++;
  else if (e instanceof tether.TetherMemoryError && e instanceof RangeError && e.kind === 'MemoryError') counts.memory++;
  else if (allowed && e instanceof allowed) counts.own++;
  else findings.push(`${name}: ${e?.constructor?.name}: ${e?.message ?? e}`);
}
/** One round of each operation, in order, without failures, as the failing rounds run them. */
async function plainPass() {
  for (const [name, op, allowed] of [...operations, ...asyncOperations]) {
    testing.fail_allocations(0, 0);
    try {
      await op();
    } catch (e) {
      if (!(allowed && e instanceof allowed)) findings.push(`${name} without failures: ${e?.message ?? e}`);
    }
    testing.fail_allocations(0);
    testing.make_pair(1, 2).first;
  }
  testing.stash_clear();
}
// V8 keeps a bounded handful of recent values alive (as in fuzz/arguments.mjs): the baseline is
// taken after the first failing rounds (at most 500), both counts right after the same plain
// pass; still the count ends within a few objects of it either way (measured: -5 to +5, from
// 500 to 100,000 rounds), so growth beyond NOISE is the finding, while a leak on any path
// grows with the rounds.
const NOISE = 16;
const rounds = Number(opts.rounds);
const warm = Math.min(500, Math.floor(rounds / 2));
let base;
for (let r = 0; r < rounds; r++) {
  if (r === warm) {
    await plainPass();
    base = await settle();
  }
  const isAsync = random() < 0.1;
  const [name, op, allowed] = pick(isAsync ? asyncOperations : operations);
  const n = 1 + Math.floor(random() * 4);
  testing.fail_allocations(n, pick([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]));
  try {
    const promise = op();
    if (isAsync) {
      // The failures stay armed while the native side runs on the libuv pool.
      await promise;
    }
    outcome(name, allowed, undefined);
  } catch (e) {
    outcome(name, allowed, e);
  }
  counts.used += n - testing.fail_allocations(0);
  if (testing.make_pair(1, 2).first !== 1) findings.push(`${name}: a plain call after the failures gave a wrong result`);
}
await plainPass();
const left = (await settle(200, base)) - base;
if (Math.abs(left) > NOISE) findings.push(`live_objects() is ${left} from its baseline (taken after ${warm} rounds) after ${rounds}`);
for (const [key, value] of [
  ['rounds', rounds],
  ['injected failures', counts.used],
  ['memory errors', counts.memory],
  ['own errors', counts.own],
  ['completed', counts.completed],
  ['live objects after', `${left >= 0 ? '+' : ''}${left}`],
]) {
  console.log(`figure: ${key} = ${value}`);
}
for (const f of findings.slice(0, 50)) console.log(`finding: ${f}`);
