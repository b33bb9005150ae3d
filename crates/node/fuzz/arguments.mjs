// Fuzzes the Node frontend's call-argument conversion with fast-check arbitraries (`cargo xtask harden`).
//
// Values: BigInt (in and far out of 64 bits), -0, NaN, infinities, Symbols, strings with lone
// surrogates, typed arrays and Buffers, sparse arrays, nested arrays and objects, cycles (an array
// or object that contains itself), chains around MAX_NESTING_DEPTH, Proxies whose traps throw or
// lie, objects whose getters throw, tether objects (a live Pair, a disposed one, an Array),
// functions, Maps, Sets, Dates, and so on; passed to testing.echo, add, sum, make_map, call,
// stash/take, make_array and the Pair constructor with random arities.
//
// Checked per value: a call either returns or throws a TetherError (TetherTypeError,
// TetherIndexError included) or the very error a getter, trap or callback threw; the process never
// crashes; at the end `live_objects()` is back at its baseline. Each failure is one JSON line
// in the findings file. Usage:
//   node --expose-gc fuzz/arguments.mjs --findings FILE [--seed N] [--runs N | --seconds S]
import fs from 'node:fs';
import { parseArgs } from 'node:util';

import fc from 'fast-check';

// Every native error captures a backtrace when RUST_BACKTRACE is set; the fuzzer raises errors by
// the thousand and reads none of them. Set before the addon loads (it reads it once): a dynamic
// import, as static imports are evaluated first.
process.env.RUST_LIB_BACKTRACE ??= '0';
const tether = await import('../index.mjs');

const testing = tether.namespace('testing');
const { Pair } = testing;
const { values: opts } = parseArgs({
  options: {
    findings: { type: 'string' },
    seed: { type: 'string', default: '1' },
    runs: { type: 'string', default: '0' },
    seconds: { type: 'string', default: '0' },
  },
});

/** What a getter, trap or callback throws: it must come back out as itself. */
class Planted extends Error {}
const plant = () => {
  throw new Planted('planted');
};

const typed = (e) =>
  e instanceof tether.TetherError || e instanceof tether.TetherTypeError || e instanceof tether.TetherIndexError;

const limit = tether.MAX_NESTING_DEPTH;

const leaf = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.integer(),
  fc.double(), // NaN, -0 and the infinities included
  fc.constantFrom(-0, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER + 2, 2 ** 63, -(2 ** 63), 5e-324),
  fc.bigInt(),
  fc.constantFrom(2n ** 63n, -(2n ** 63n) - 1n, 2n ** 64n, 2n ** 200n, -1n),
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('lone \ud800 surrogate', '\udfff', '\u{1F600}'.repeat(9), 'nul\0inside'),
  fc.string().map((s) => Symbol(s)),
  fc.constantFrom(Symbol.iterator, Symbol.for('k')),
  fc.uint8Array(),
  fc.int32Array(),
  fc.float64Array(),
  fc.bigInt64Array(),
  fc.uint8Array().map((a) => Buffer.from(a)),
  fc.constantFrom(new ArrayBuffer(8), new DataView(new ArrayBuffer(4)), new Date(0), /re/g, new Error('e'), Promise.resolve(1), new WeakMap()),
  fc.constantFrom('pair', 'disposed', 'array', 'map', 'echo').map(tetherObject),
  fc.constantFrom(
    () => 1,
    () => plant(),
    function named(a) {
      return a;
    },
    class K {},
    Math.max,
  ),
);

const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, leaf, tie('container'), tie('hostile')),
  container: fc.oneof(
    fc.array(tie('value'), { maxLength: 4 }),
    fc.sparseArray(tie('value'), { maxLength: 20, maxNumElements: 3 }),
    fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 }),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => new Map(a.map((v, i) => [i, v]))),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => new Set(a)),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => Object.assign(Object.create(null), a)),
  ),
  // Built at call time (a Lazy): fast-check itself reads the values it generates, and a
  // throwing getter or trap must meet the frontend, not the generator.
  hostile: fc.oneof(
    // cycles: directly, through an object, through a nested array
    fc.array(tie('value'), { maxLength: 3 }).map((a) => lazy(a, (a) => (a.push(a), a))),
    fc.array(tie('value'), { maxLength: 3 }).map((a) =>
      lazy(a, (a) => {
        const o = { a };
        a.push(o);
        return o;
      }),
    ),
    // a chain around the limit
    fc.constantFrom(limit - 1, limit, limit + 1, 5000).map((n) =>
      lazy(n, (n) => {
        let v = [1];
        for (let i = 0; i < n; i++) v = i % 2 ? [v] : { k: v };
        return v;
      }),
    ),
    // the same container side by side (no cycle)
    fc.array(tie('value'), { maxLength: 3 }).map((a) => lazy(a, (a) => [a, a, { a }])),
    // getters that throw, on an object and on an array index
    fc.dictionary(fc.string(), tie('value'), { maxKeys: 3 }).map((o) =>
      lazy(o, (o) => Object.defineProperty(o, 'boom', { get: plant, enumerable: true })),
    ),
    fc.array(tie('value'), { maxLength: 3 }).map((a) =>
      lazy(a, (a) => Object.defineProperty(a, 0, { get: plant, enumerable: true })),
    ),
    // Proxies whose traps throw, or lie about the length
    fc
      .tuple(tie('value'), fc.constantFrom('get', 'ownKeys', 'has', 'getOwnPropertyDescriptor', 'getPrototypeOf'))
      .map(([v, trap]) => lazy(v, (v) => new Proxy(typeof v === 'object' && v !== null ? v : [v], { [trap]: plant }))),
    fc.array(tie('value'), { maxLength: 3 }).map((a) =>
      lazy(a, (a) => new Proxy(a, { get: (t, k) => (k === 'length' ? 2 ** 32 - 1 : Reflect.get(t, k)) })),
    ),
    fc.constantFrom(2 ** 32 - 1, 2 ** 27 + 1).map((n) => lazy(n, (n) => new Array(n))),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => lazy(a, (a) => Object.freeze(a))),
  ),
}));

/** A value built from `parts` (materialized first) only when the call is made. */
class Lazy {
  constructor(parts, build) {
    this.parts = parts;
    this.build = build;
  }
  toString() {
    return `lazy(${this.build})(${fc.stringify(this.parts)})`;
  }
}
const lazy = (parts, build) => new Lazy(parts, build);

function materialize(v) {
  if (v instanceof Lazy) return v.build(materialize(v.parts));
  if (Array.isArray(v)) return v.map(materialize); // holes stay holes
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [k, materialize(x)]));
  if (v instanceof Set) return new Set([...v].map(materialize));
  if (v !== null && typeof v === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(v))) {
    const out = Object.create(Object.getPrototypeOf(v));
    for (const k of Object.keys(v)) out[k] = materialize(v[k]);
    return out;
  }
  return v;
}

function tetherObject(which) {
  switch (which) {
    case 'pair':
      return new Pair(1, 'two');
    case 'disposed': {
      const p = new Pair(0, 0);
      p[Symbol.dispose]();
      return p;
    }
    case 'array':
      return testing.make_array(2);
    case 'map':
      return testing.make_map([1, 'k'], [null, 2.5]);
    default:
      return testing.echo;
  }
}

const target = fc.constantFrom('echo', 'echo*', 'add', 'sum', 'make_map', 'call', 'stash', 'make_array', 'Pair');
const input = fc.tuple(target, fc.array(value, { maxLength: 3 }));

function callOne(name, args) {
  switch (name) {
    case 'echo':
      return testing.echo(args[0]);
    case 'echo*':
      return testing.echo(...args);
    case 'add':
      return testing.add(...(args.length ? args : [1, 2]));
    case 'sum':
      return testing.sum(args[0]);
    case 'make_map':
      return testing.make_map(...args);
    case 'call':
      return testing.call((...a) => (a.length % 2 ? plant() : a[0]), ...args);
    case 'stash':
      testing.stash(typeof args[0] === 'string' ? args[0] : 'k', args[1]);
      return testing.take('k');
    case 'make_array':
      return testing.make_array(args[0]);
    default:
      return new Pair(...args);
  }
}

const findingsFile = opts.findings;
let findings = 0;
function finding(what, detail) {
  findings += 1;
  fs.appendFileSync(findingsFile, JSON.stringify({ what, detail: String(detail).slice(0, 2000) }) + '\n');
}

function show(v) {
  try {
    return fc.stringify(v).slice(0, 500);
  } catch {
    return '<unprintable>';
  }
}

async function collect(rounds) {
  for (let i = 0; i < rounds; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function settle(baseline, rounds) {
  for (let i = 0; i < rounds && testing.live_objects() !== baseline; i++) await collect(1);
  return testing.live_objects();
}

const runs = Number(opts.runs);
const deadline = Date.now() + Number(opts.seconds) * 1000;
const batch = 200;
let executions = 0;
const seed = Number(opts.seed);
const started = Date.now();
// V8 and the frontend keep a few recent values alive (a bounded number), so the baseline is
// taken after a first batch of inputs.
for (const [name, args] of fc.sample(input, { seed: -1, numRuns: 500 })) {
  try {
    callOne(name, materialize(args));
  } catch {
    // only what the calls leave behind matters here
  }
}
await collect(4);
testing.stash_clear();
const baseline = testing.live_objects();
for (let b = 0; runs ? executions < runs : Date.now() < deadline; b++) {
  const n = runs ? Math.min(batch, runs - executions) : batch;
  for (const [name, args] of fc.sample(input, { seed: seed + b, numRuns: n })) {
    executions += 1;
    try {
      callOne(name, materialize(args));
    } catch (e) {
      if (!typed(e) && !(e instanceof Planted)) {
        const kind = e?.constructor?.name ?? typeof e;
        finding(`untyped ${kind} from ${name}: ${String(e?.message ?? e).slice(0, 200)}`, `${show(args)}\n${e?.stack ?? ''}`);
      }
    }
  }
  testing.stash_clear();
  await collect(1);
}
// Finalizers run late and V8 keeps a few recent values alive for a while, so the count is
// compared once, at the end, after collecting until it settles.
testing.stash_clear();
const live = await settle(baseline, 400);
if (live !== baseline) finding(`live_objects() ${live} at the end, baseline ${baseline}`, `seed ${seed}`);
const ms = Date.now() - started;
console.log(`stat::number_of_executed_units: ${executions}`);
console.log(`findings: ${findings}, ${ms} ms`);
