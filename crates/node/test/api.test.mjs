// The public API beyond the conformance list: packaging, conversions, containers, errors.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import util from 'node:util';

import tetherDefault, * as tether from 'tether-ffi';

import { collect, expectLiveBackTo, settledBaseline, testing } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { Pair } = testing;

test('the package loads as ESM and CommonJS, sharing one addon state', () => {
  const cjs = require('tether-ffi');
  assert.equal(typeof cjs.getGlobalFunc, 'function');
  assert.equal(tetherDefault, cjs);
  assert.equal(tether.getGlobalFunc('testing.echo'), cjs.getGlobalFunc('testing.echo'));
  assert.equal(cjs.getClass('testing.Pair'), Pair);
  assert.equal(tether.isMainEnv, true);
});

test('native functions are plain JS functions with a name', () => {
  const echo = tether.getGlobalFunc('testing.echo');
  assert.equal(typeof echo, 'function');
  assert.equal(echo.name, 'echo');
  assert.equal(echo.qualifiedName, 'testing.echo');
  assert.equal(echo.call(null, 3), 3);
  assert.equal(echo.apply(null, ['x']), 'x');
  assert.equal(typeof echo.callAsync, 'function');
});

test('a call of one wrapper to a function of arity one takes its own entry, with every outcome', () => {
  // call.rs `one_wrapper_callback`: a leaf's call and a cell getter's read there, anything else
  // on to the general callback; each outcome and error as on the general path.
  const a = new Pair(1, 2);
  const p = new Pair(a, null);
  assert.equal(testing.echo(a), a, 'a leaf returning its argument');
  assert.equal(testing.echo(p).first, a, 'the getter of a cell holding a wrapper');
  assert.equal(a.first, 1, 'the getter of a cell holding a number');
  assert.equal(testing.is_aligned(a), true, 'a leaf returning another value');
  assert.equal(testing.drop_in_thread(a), null, 'a function that is no leaf goes the general way');
  assert.equal(testing.echo(a), a, 'and the object it dropped a reference of lives on');
  const gone = new Pair(0, 0);
  gone[Symbol.dispose]();
  assert.throws(() => gone.first, { name: 'TetherRuntimeError', message: /disposed/ });
  assert.throws(() => testing.is_aligned(gone), {
    name: 'TetherRuntimeError',
    message: /^testing.is_aligned\(\) argument 'x': this tether object was disposed/,
  });
  assert.throws(() => testing.drop_in_thread(gone), { name: 'TetherRuntimeError', message: /'x'.*disposed/ });
  // A getter taken off its class and applied to another tether object is refused by type.
  const getFirst = Object.getOwnPropertyDescriptor(Pair.prototype, 'first').get;
  assert.throws(() => getFirst.call(testing.make_array(2)), {
    name: 'TetherTypeError',
    message: /^testing.Pair.first\(\) argument 'self' must be testing.Pair, not tether.Array/,
  });
  assert.equal(p.first, a, 'and the entry keeps working');
});

test('numbers: integers go in as int, others as float; BigInt in and out', () => {
  assert.equal(testing.add(2, 3), 5);
  assert.throws(() => testing.add(1.5, 2), { name: 'TetherTypeError', message: "testing.add() argument 'a' must be int, not float" });
  assert.equal(testing.add(2n, 3n), 5);
  assert.equal(testing.add(2n ** 62n, 2n ** 62n - 1n), 2n ** 63n - 1n);
  assert.equal(typeof testing.add(2 ** 53, 1), 'bigint', 'beyond 2^53 comes back as BigInt');
  assert.equal(testing.add(2 ** 52, 1), 2 ** 52 + 1);
  assert.throws(() => testing.echo(2n ** 64n), { name: 'TetherValueError', message: /BigInt/ });
  assert.equal(testing.sum([1, 2.5, 3n]), 6.5);
  assert.ok(Number.isNaN(testing.echo(NaN)));
  assert.equal(testing.echo(Infinity), Infinity);
  assert.ok(Object.is(testing.echo(-0), -0), '-0 keeps its sign');
});

test('leaf calls of integral numbers take the int entry with the typed call\'s values and errors', () => {
  // A leaf of int parameters and result given integral numbers in the frame calls its int
  // entry (no cells); floats, bigints and -0 (a float) take the general path. Both agree.
  assert.equal(testing.add3(1, 2, 3), 6);
  assert.equal(testing.add3(2 ** 52, 2 ** 52, -(2 ** 53)), 0);
  assert.equal(testing.add3(2 ** 53, 2 ** 53, 0), 2n ** 54n, 'a result past 2^53 comes back a BigInt');
  assert.equal(testing.add3(Number.MAX_SAFE_INTEGER, 1, 0), 2n ** 53n);
  assert.throws(() => testing.add3(-0, 0, 0), { name: 'TetherTypeError', message: /argument 'a' must be int, not float/ });
  for (const n of [-1, -(2 ** 40)]) {
    assert.throws(() => testing.fail_allocations(n, 0), {
      name: 'TetherValueError',
      message: `testing.fail_allocations() argument 'n' must not be negative, got ${n}`,
    });
  }
  assert.equal(testing.fail_allocations(0, 0), 0);
  assert.throws(() => testing.add3(1, 2, '3'), { name: 'TetherTypeError', message: /argument 'c' must be int, not str/ });
});

test('numbers travel in the call frame beside wrappers, functions and other values', () => {
  // Shims of arity 1-3 pass numbers as frame values; each position and mix must convert
  // exactly as a Node-API read would, and a later argument whose conversion runs JS (a getter
  // calling another native function, which refills the frame) must not disturb them.
  assert.equal(testing.add3(1, 2, 3), 6);
  assert.equal(testing.add3(-(2 ** 40), 2 ** 40, 7), 7);
  assert.throws(() => testing.add3(1, 2.5, 3), { name: 'TetherTypeError', message: /argument 'b' must be int, not float/ });
  assert.equal(testing.add3(1, 2n, 3), 6);
  const w = new Pair(1, 2);
  for (const [a, b] of [[1.5, w], [w, 2], [-0, () => 3], [2 ** 63, NaN]]) {
    const p = testing.make_pair(a, b);
    assert.ok(Object.is(p.first, a) || (typeof p.first === 'function' && typeof a === 'function'));
    assert.ok(Object.is(p.second, b) || (typeof b === 'function' && p.second === b) || Number.isNaN(b));
  }
  const sneaky = {
    get x() {
      assert.equal(testing.add3(7, 8, 9), 24); // another shim call rewrites the frame
      return 1;
    },
  };
  const p = testing.make_pair(41.5, sneaky);
  assert.equal(p.first, 41.5);
  assert.equal(p.second.get('x'), 1);
  assert.equal(testing.echo(3), 3);
  assert.equal(testing.echo(0.25), 0.25);
});

test('a callback returning a wrapper it disposed is a typed error, and the env goes on', () => {
  // The result comes back through the frame as a handle; a disposed wrapper's handle must not
  // reach its released object (the spare taken for a live one is tested by the echo paths).
  const call = tether.getGlobalFunc('testing.call');
  assert.throws(
    () =>
      call(() => {
        const y = new Pair(1, 2);
        y[Symbol.dispose]();
        return y;
      }),
    { name: 'TetherRuntimeError', message: /disposed/ },
  );
  const kept = new Pair(3, 4);
  for (let i = 0; i < 100; i++) assert.equal(call(() => kept), kept);
});

test('bytes: Buffers and typed arrays go in as bytes and come back as Buffers', () => {
  assert.deepEqual(testing.echo(new Uint8Array([1, 2, 3])), Buffer.from([1, 2, 3]));
  assert.deepEqual(testing.echo(new Uint16Array([1]).buffer), Buffer.from([1, 0]));
  assert.deepEqual(testing.echo(Buffer.alloc(0)), Buffer.alloc(0));
});

test('symbols cannot cross', () => {
  assert.throws(() => testing.echo(Symbol('s')), { name: 'TetherTypeError', message: /symbol/ });
});

test('Array: length, get, iteration, toArray, negative index and range errors', () => {
  const arr = tether.toNative([1, 'two', [3]]);
  assert.equal(arr.length, 3);
  assert.equal(arr.get(1), 'two');
  assert.equal(arr.get(-3), 1);
  assert.ok(arr.get(2) instanceof tether.TetherArray);
  assert.deepEqual(arr.get(2).toArray(), [3]);
  assert.deepEqual([...arr].slice(0, 2), [1, 'two']);
  assert.throws(() => arr.get(3), (e) => e instanceof RangeError && e.kind === 'IndexError');
  assert.equal(util.inspect(tether.toNative([1, 'a'])), "tether.Array [ 1, 'a' ]");
  assert.equal(String(tether.toNative([1, 'a'])), 'tether.Array(1, "a")');
  const built = new tether.TetherArray([4, 5]);
  assert.ok(built instanceof tether.TetherArray);
  assert.deepEqual(built.toArray(), [4, 5]);
  assert.equal(testing.sum(built), 9);
});

test('Map: get, has, keys, values, entries, size, iteration', () => {
  const p = new Pair(1, 2);
  const m = tether.toNative({ a: 1, b: p, c: { nested: true } });
  assert.equal(m.size, 3);
  assert.equal(m.has('a'), true);
  assert.equal(m.has('zzz'), false);
  assert.equal(m.get('zzz'), undefined);
  assert.equal(m.get('b'), p);
  assert.ok(m.get('c') instanceof tether.TetherMap);
  assert.equal(m.get('c').get('nested'), true);
  assert.deepEqual([...m.keys()], ['a', 'b', 'c']);
  assert.equal([...m.values()][1], p);
  assert.deepEqual([...m].map(([k]) => k), ['a', 'b', 'c']);
  const seen = [];
  m.forEach((v, k) => seen.push(k));
  assert.deepEqual(seen, ['a', 'b', 'c']);
  const fromEntries = new tether.TetherMap([[1, 'one'], [p, 'pair']]);
  assert.equal(fromEntries.get(1), 'one');
  assert.equal(fromEntries.get(p), 'pair');
  assert.equal(util.inspect(tether.toNative({ k: 1 })), "tether.Map Map(1) { 'k' => 1 }");
  const fromJsMap = tether.toNative(new Map([[p, 'by object'], ['s', [1, 2]]]));
  assert.ok(fromJsMap instanceof tether.TetherMap);
  assert.equal(fromJsMap.get(p), 'by object');
  assert.deepEqual(fromJsMap.get('s').toArray(), [1, 2]);
  const fromSet = tether.toNative(new Set([p, 3]));
  assert.ok(fromSet instanceof tether.TetherArray);
  assert.equal(fromSet.get(0), p);
});

test('a cyclic JS value is refused, not looped over', () => {
  const cyclic = [];
  cyclic.push(cyclic);
  assert.throws(() => testing.echo(cyclic), { name: 'TetherValueError', message: /contains itself/ });
});

test('callAsync resolves with canonical wrappers and rejects with typed errors', async () => {
  const p = new Pair(1, 2);
  assert.equal(await testing.echo.callAsync(p), p);
  const made = await testing.make_pair.callAsync(p, 'x');
  assert.equal(made.first, p);
  assert.throws(() => testing.add.callAsync(1), { name: 'TetherTypeError' }); // bound on the JS thread, before the pool
  const err = new RangeError('from a pool-thread callback');
  await assert.rejects(testing.call_in_thread.callAsync(() => {
    throw err;
  }), (e) => e === err);
  assert.throws(() => testing.echo.callAsync.call({}, 1), { name: 'TetherTypeError', message: /callAsync/ });
});

test('errors carry kind and backtrace and print their class', () => {
  try {
    testing.raise_error('KeyError', 'missing');
    assert.fail('should throw');
  } catch (e) {
    assert.equal(e.name, 'TetherKeyError');
    assert.equal(e.kind, 'KeyError');
    assert.equal(typeof e.backtrace, 'string');
    assert.match(String(e), /^TetherKeyError: missing/);
  }
  const e = new tether.TetherValueError('made in JS', 'ValueError');
  assert.ok(e instanceof tether.TetherError);
  assert.equal(e.kind, 'ValueError');
});

test('constructor and class checks', () => {
  assert.throws(() => new tether.TetherObject(), { name: 'TetherTypeError' });
  assert.throws(() => new Pair(1), { name: 'TetherTypeError', message: "testing.Pair() missing 1 required argument: 'second'" });
  // Up to four values convert on the stack, more on the heap (raw::ArgList too, past eight):
  // both paths give the same errors and release what they converted.
  for (const extra of [[3, 4, 5], [3, 4, 5, 6, 7, 8, 9, 10, 11]]) {
    const held = new Pair(0, 0);
    assert.throws(() => new Pair(held, held, ...extra), {
      name: 'TetherTypeError',
      message: `testing.Pair() takes 2 positional arguments but ${2 + extra.length} were given`,
    });
    assert.equal(new Pair(held, 1).first, held);
  }
  // Wrapper arguments travel as handles in the call frame: fields hold the very objects, in
  // their places, beside plain values and functions; a disposed one names its parameter.
  const a = new Pair(1, 2);
  const b = new Pair(3, 4);
  const f = () => 5;
  for (const [first, second] of [[a, b], [b, a], [a, 7], [7, b], [f, a], [a, a]]) {
    const p = new Pair(first, second);
    assert.equal(p.first, first);
    assert.equal(p.second, second);
  }
  const gone = new Pair(0, 0);
  gone[Symbol.dispose]();
  assert.throws(() => new Pair(a, gone), { name: 'TetherRuntimeError', message: /^testing.Pair\(\) argument 'second': this tether object was disposed/ });
  assert.equal(new Pair(a, b).second, b, 'and construction keeps working');
  // `echo(x)` of one wrapper runs its own path (the frame's handle alone): a disposed
  // argument there is still its parameter's typed error, and the next call works.
  assert.equal(testing.echo(a), a);
  assert.throws(() => testing.echo(gone), { name: 'TetherRuntimeError', message: /^testing.echo\(\) argument .*this tether object was disposed/ });
  assert.equal(testing.echo(b), b);
  assert.equal(tether.getClass('no.such.Type'), undefined);
  const Aligned = tether.getClass('testing.Aligned');
  assert.throws(() => new Aligned(), { name: 'TetherTypeError', message: /no constructor/ });
  class MyPair extends Pair {
    sum() {
      return this.first + this.second;
    }
  }
  const mine = new MyPair(2, 3);
  assert.equal(mine.sum(), 5);
  assert.equal(testing.echo(mine), mine, 'a JS subclass instance is the canonical wrapper');
});

test('read-only and unknown attributes', () => {
  const p = new Pair(1, 2);
  p.extra = 'js-only property';
  assert.equal(p.extra, 'js-only property');
  assert.equal(testing.echo(p).extra, 'js-only property', 'JS properties survive on the canonical wrapper');
});

test('a wrapper collected but not yet finalized is replaced, and its late finalizer leaves the new one alone', async () => {
  const baseline = await settledBaseline();
  await (async () => {
    for (let i = 0; i < 20; i++) {
      (() => {
        testing.stash('dying', testing.make_pair(i, null));
      })();
      // Collect synchronously: the old wrapper is gone but its finalizer waits for setImmediate,
      // so this refetch meets a dying slot (the core's Previous::Dying) and makes a new wrapper.
      global.gc();
      const fresh = testing.take('dying');
      testing.stash('dying', fresh);
      assert.equal(fresh.first, i);
      await collect(1); // the old finalizer runs now, with an older generation
      assert.equal(testing.take('dying'), fresh, 'the new wrapper is still the canonical one');
    }
  })();
  await expectLiveBackTo(baseline);
});

test('JS callbacks passed to native code are released once native code lets go', async () => {
  const baseline = await settledBaseline();
  (() => {
    for (let i = 0; i < 1000; i++) {
      const f = (x) => x + i;
      assert.equal(testing.call(f, 1), 1 + i);
      testing.stash(`callback-${i % 10}`, f);
      assert.equal(testing.echo(f), f);
    }
    testing.stash_clear();
  })();
  await expectLiveBackTo(baseline);
});

test('a JS function passed again is lent a Function for the call: nothing left behind', async () => {
  // The first pass links `cb` to its native side; every later call through a shim is lent
  // the env's reused shell (no reference, no registration), given back after the call.
  const baseline = await settledBaseline();
  (() => {
    const cb = (x = 1) => x;
    assert.equal(testing.call(cb, 0), 0);
    // The first pass's Function is gone; its block stays until cb's Link (a weak reference)
    // is collected with cb.
    const linked = testing.live_objects();
    for (let i = 0; i < 1000; i++) {
      assert.equal(testing.call(cb, i), i);
      assert.equal(testing.echo(cb), cb, 'a lent Function goes back as the function itself');
    }
    assert.equal(testing.live_objects(), linked, 'no Function made after the first pass');
    // Two functions in one call: the second gets its registered Function.
    assert.equal(testing.call((f, g) => f(g()), (x) => x + 1, () => 41), 42);
    assert.equal(testing.call((f, g) => f(g()), cb, cb), 1, 'one function twice in a call');
    // Nested: inside its own call, the function's Function is the lent one.
    assert.equal(testing.call(() => testing.echo(cb) === cb && testing.call(cb, 5)), 5);
    // A callback that throws: the Function still goes back.
    const boom = new Error('from the lent callback');
    assert.throws(
      () =>
        testing.call(() => {
          throw boom;
        }),
      (e) => e === boom,
    );
    // Six functions were passed for the first time above (each leaves its block until collected).
    assert.equal(testing.live_objects(), linked + 6, 'lent Functions were all given back');
    for (let i = 0; i < 1000; i++) assert.equal(testing.call(() => i), i); // a new function every time
  })();
  await expectLiveBackTo(baseline, 'and the first passes\' blocks went with their functions');
});

test('native functions work where code generation from strings is disallowed (the shims fall back to one shared factory)', async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `
    const t = require('tether-ffi').namespace('testing');
    const x = t.make_pair(null, null);
    for (let i = 0; i < 1000; i++) if (t.make_pair(x, null).first !== x) throw new Error('make_pair');
    let s = 0;
    for (let i = 0; i < 1000; i++) s += t.add3(1, 2, i);
    if (s !== 3 * 1000 + 999 * 500) throw new Error('add3 ' + s);
    if (t.echo(x) !== x || t.call(() => x) !== x) throw new Error('echo/call');
    try { t.add3(1, 2, 'no'); throw new Error('no TypeError'); } catch (e) { if (!/argument 'c'/.test(e.message)) throw e; }
    try { new Function('return 1'); throw new Error('code generation was allowed'); } catch (e) { if (!(e instanceof EvalError)) throw e; }
    console.log('ok');
  `;
  const run = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '-e', script], {
    encoding: 'utf8',
    cwd: new URL('.', import.meta.url),
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, 'ok\n');
});

test('a function keeps its native side across calls however it is made: frozen, a proxy, a bound function; invisible to reflection', async () => {
  const baseline = await settledBaseline();
  (() => {
    const plain = (x) => x;
    const frozen = Object.freeze((x) => x + 1);
    const proxy = new Proxy((x) => x + 2, {});
    const bound = function (x) {
      return x + this.k;
    }.bind({ k: 3 });
    for (const [f, k] of [[plain, 0], [frozen, 1], [proxy, 2], [bound, 3]]) {
      const keysBefore = Reflect.ownKeys(f);
      assert.equal(testing.call(f, 10), 10 + k); // linked here
      const linked = testing.live_objects();
      for (let i = 0; i < 100; i++) {
        assert.equal(testing.call(f, i), i + k);
        assert.equal(testing.echo(f), f, 'the function itself comes back');
      }
      assert.equal(testing.live_objects(), linked, 'later calls are lent a Function, none made');
      assert.deepEqual(Reflect.ownKeys(f), keysBefore, 'no property added that reflection sees');
    }
    assert.ok(Object.isFrozen(frozen));
  })();
  await expectLiveBackTo(baseline, 'the functions\' native sides went with them');
});

test('a revoked proxy callback and a callback recursing through native code until the stack runs out are errors, and the env goes on', async () => {
  const baseline = await settledBaseline();
  (() => {
    const { proxy, revoke } = Proxy.revocable(() => 5, {});
    assert.equal(testing.call(proxy), 5); // linked, then lent
    revoke();
    for (let i = 0; i < 3; i++) {
      assert.throws(() => testing.call(proxy), (e) => e instanceof TypeError && /revoked/.test(e.message));
    }
    assert.equal(testing.echo(proxy), proxy, 'still the same function to native code');
    const deep = (n) => (n > 0 ? testing.call(deep, n - 1) + 1 : 0);
    assert.equal(testing.call(deep, 50), 50);
    assert.throws(() => testing.call(deep, 1_000_000), RangeError);
    assert.equal(testing.call(deep, 10), 10, 'calls go on after the overflow');
    assert.equal(testing.add3(1, 2, 3), 6);
  })();
  await expectLiveBackTo(baseline, 'nothing left behind by the failed calls');
});

test('a callback\'s result is its own, whatever a call it made returned', () => {
  // A nested call whose callback returned a wrapper marks the shared call frame; the outer
  // callback's plain result must not be read through that mark.
  const x = new Pair(1, 2);
  const toX = () => x;
  assert.equal(testing.call(toX), x);
  assert.equal(
    testing.call(() => {
      testing.call(toX);
      return 5;
    }),
    5,
  );
  assert.equal(
    testing.call(
      (a) => {
        testing.call(toX);
        return a;
      },
      'plain',
    ),
    'plain',
  );
  assert.equal(
    testing.call(() => {
      testing.call(toX);
      return null;
    }),
    null,
  );
  assert.equal(testing.call(() => testing.call(toX)), x);
});

test('call(cb) with one linked function: its result is the wrapper cb returned, at any depth', async () => {
  // `testing.call(cb)` takes the one-callable path (call.rs `call_of_one_callable`): the
  // callback's own JS value goes back when the call returns what the callback returned.
  const baseline = await settledBaseline();
  (() => {
    const x = new Pair(1, 2);
    const y = new Pair(3, 4);
    const toX = () => x;
    const toY = () => y;
    assert.equal(testing.call(toX), x); // linked here
    for (let i = 0; i < 100; i++) assert.equal(testing.call(toX), x);
    // Nested: the inner call's record is its own; the outer returns what its callback returned.
    assert.equal(testing.call(() => testing.call(toX)), x);
    assert.equal(
      testing.call(() => {
        testing.call(toY);
        return x;
      }),
      x,
    );
    assert.equal(
      testing.call(() => {
        testing.call(toX);
        return 5;
      }),
      5,
      'a number after a nested wrapper result',
    );
    // A callback run by a general call inside (two arguments), then a different object.
    assert.equal(
      testing.call(() => {
        testing.call((a) => a, y);
        return x;
      }),
      x,
    );
    // Many callbacks inside: past the unscoped budget they run in scopes of their own.
    assert.equal(testing.call(() => testing.call_times(toY, 40)), y);
    assert.equal(testing.call_times(() => testing.call(toX), 40), x);
    // The result is a wrapper the callback made: the new object's own wrapper.
    const made = testing.call(() => new Pair(x, y));
    assert.equal(made.first, x);
    assert.equal(testing.echo(made), made);
    // A native result that is not the callback's: its canonical wrapper.
    assert.equal(testing.call(() => testing.echo(y)), y);
    assert.equal(x.first, 1, 'the wrapper still works');
    // Throwing after a nested wrapper result leaves nothing for the next call.
    const boom = new Error('after a nested result');
    assert.throws(
      () =>
        testing.call(() => {
          testing.call(toX);
          throw boom;
        }),
      (e) => e === boom,
    );
    assert.equal(testing.call(toY), y);
    // The wrapper a nested call handed back (its record) disposed before the outer returns it:
    // a typed error, not a read of the recorded value, and calls go on.
    const z = new Pair(5, 6);
    assert.throws(
      () =>
        testing.call(() => {
          const r = testing.call(() => z);
          r[Symbol.dispose]();
          return r;
        }),
      { name: 'TetherRuntimeError', message: /disposed/ },
    );
    assert.equal(testing.call(toY), y);
    // Not a function: the argument is named, and calls go on.
    assert.throws(() => testing.call(5), (e) => e instanceof TypeError && /argument 1/.test(e.message));
    assert.equal(testing.call(toX), x);
  })();
  await expectLiveBackTo(baseline, 'the results\' spare references died with their wrappers');
});

test('a nested call(cb) whose new Function shell cannot be made is a MemoryError naming its argument', async () => {
  // The outer call(cb) holds the env's spare shell, so the nested call's function needs a new
  // one: with no memory for it, that call fails naming its argument, the outer callback goes
  // on, and nothing is left lent or alive.
  const baseline = await settledBaseline();
  (() => {
    const x = new Pair(1, 2);
    const seen = [];
    const inner = () => seen.push('inner ran');
    let armed = false;
    const outer = () => {
      if (!armed) return x;
      testing.fail_allocations(1);
      try {
        testing.call(inner);
      } catch (e) {
        seen.push(e);
      } finally {
        testing.fail_allocations(0);
      }
      return x;
    };
    // Both linked first: from then on each pass is lent a Function, the outer the spare.
    testing.call(inner);
    assert.equal(testing.call(outer), x);
    armed = true;
    assert.equal(testing.call(outer), x);
    assert.equal(seen.length, 2, 'the first pass ran, the nested one did not');
    const e = seen[1];
    assert.ok(e instanceof tether.TetherMemoryError, String(e));
    assert.match(e.message, /argument 1.*out of memory|out of memory.*argument 1/);
    assert.equal(testing.call(() => testing.call(() => x)), x, 'lending works again, nested too');
  })();
  await expectLiveBackTo(baseline);
});

test('a lent Function the callee keeps becomes the function\'s registered Function', async () => {
  const baseline = await settledBaseline();
  await (async () => {
    let calls = 0;
    const cb = () => {
      calls++;
      return 7;
    };
    assert.equal(testing.call(cb), 7); // linked now
    testing.stash('kept', cb); // lent, kept: it escapes, taking a reference to cb
    assert.equal(testing.live_objects(), baseline + 1, 'kept by the stash, the spare replaced');
    testing.stash('again', cb); // its registered Function: no second one
    assert.equal(testing.live_objects(), baseline + 1);
    const kept = testing.take('kept');
    assert.equal(kept, cb, 'comes back as the function itself');
    assert.equal(testing.call(kept), 7, 'and calls it');
    assert.equal(await testing.call_in_thread.callAsync(testing.take('again')), 7, 'from another thread too');
    assert.equal(calls, 3);
    // Kept from inside its own call, while lent.
    const inner = () => {
      testing.stash('inside', inner);
      return 8;
    };
    assert.equal(testing.call(inner), 8);
    assert.equal(testing.call(inner), 8);
    assert.equal(testing.take('inside'), inner);
    testing.stash_clear();
  })();
  await expectLiveBackTo(baseline, 'released once the stash let go');
});

test('spare references of returned and lent wrappers die with the wrapper', async () => {
  // Returning a live wrapper's object again leaves a spare +1 in its slot, and a wrapper
  // argument lends one to the callee: none of them may outlive the wrapper.
  const baseline = await settledBaseline();
  (() => {
    const inner = new Pair(null, null);
    const outer = new Pair(inner, null);
    for (let i = 0; i < 1000; i++) {
      assert.equal(testing.echo(inner), inner);
      assert.equal(outer.first, inner);
    }
    assert.equal(testing.make_pair(inner, inner).first, inner);
    assert.throws(() => testing.add3(inner, 1, 2), TypeError);
    assert.throws(() => testing.echo(inner, inner), TypeError);
  })();
  await expectLiveBackTo(baseline, 'spares kept native objects alive');
});

test('cell fields return the live wrapper, or a new one once it is gone', async () => {
  // A field read returns the value's live wrapper straight from the field, and ties a new
  // one once that wrapper let go of the object.
  const baseline = await settledBaseline();
  (() => {
    const inner = new Pair(1, 2);
    const outer = new Pair(inner, 'text');
    for (let i = 0; i < 100; i++) assert.equal(outer.first, inner);
    assert.equal(outer.second, 'text');
    inner[Symbol.dispose](); // the field still holds the native object
    const again = outer.first;
    assert.notEqual(again, inner);
    assert.equal(outer.first, again);
    assert.equal(again.first, 1);
    const f = (x) => x;
    outer.second = f;
    assert.equal(outer.second, f);
  })();
  await expectLiveBackTo(baseline);
});

test('a claimed spare settles on every path, also when a getter lends it during conversion', async () => {
  // A leaf call claims its first wrapper argument's spare once every argument is converted:
  // converting a plain object runs its getters, which may call native code with the same
  // wrapper and lend its spares themselves.
  const baseline = await settledBaseline();
  (() => {
    const x = new Pair(7, null);
    for (let i = 0; i < 3; i++) testing.echo(x); // spares accumulate
    let lentInGetter = 0;
    const sneaky = {
      get k() {
        // Lends x again, and its call consumes what it lent.
        lentInGetter += testing.make_pair(x, 1).first === x ? 1 : 0;
        return 1;
      },
    };
    for (let i = 0; i < 50; i++) {
      assert.equal(testing.echo(x), x); // the claimed spare comes back as the result
      assert.equal(testing.make_pair(x, sneaky).first, x); // adopted, after a getter lent x
      assert.throws(() => testing.add3(x, 1, 2), TypeError); // released by the failing callee
      assert.equal(x.first, 7);
    }
    assert.equal(lentInGetter, 50);
  })();
  await expectLiveBackTo(baseline, 'claimed spares kept native objects alive');
});

test('the call frame: any argument can come back as itself, at any arity', () => {
  const p = new Pair(1, 2);
  const q = new Pair(3, 4);
  // Arity 3 through testing.call (variadic, the general shim): the callback's result is an
  // argument of the outer call, so the shim must hand back that argument's own wrapper.
  assert.equal(testing.call((a, b) => b, p, q), q);
  assert.equal(testing.call((a) => a, p, 7), p);
  // More arguments than the addon reads on the stack, wrappers and numbers mixed.
  const many = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? new Pair(i, i) : i));
  assert.equal(testing.call((...xs) => xs[10], ...many), many[10]);
  assert.equal(testing.call((...xs) => xs.length, ...many), 12);
  // Wrong counts take the general path and still get clear errors.
  assert.throws(() => testing.echo(), tether.TetherTypeError);
  assert.throws(() => testing.echo(p, q), /takes 1 positional argument but 2 were given/);
});

test('the call frame: a call made while converting another call\'s arguments', () => {
  const p = new Pair(1, 2);
  const q = new Pair(3, 4);
  let inner;
  // Converting the plain object runs its getter, which makes a call of its own with a
  // wrapper in the same position as the outer call's `p` (so it rewrites that frame slot)
  // before the outer call has converted `p`.
  const source = {
    get key() {
      inner = testing.call((x, y) => y, 0, q);
      return 5;
    },
  };
  const out = testing.call((m, a) => [a, m], source, p);
  assert.equal(inner, q);
  assert.equal(out.get(0), p);
  assert.equal(out.get(1).get('key'), 5);
});

test('wrappers met without their handle (nested, general paths) are found through their private handle only', () => {
  const p = new Pair('p', null);
  const echo = tether.getGlobalFunc('testing.echo');
  class Sub extends Pair {}
  const s = new Sub('s', null);
  const list = tether.toNative([p, echo, s, { nested: [p] }]);
  assert.equal(list.get(0), p);
  assert.equal(list.get(1), echo, 'a native function by its shim');
  assert.equal(list.get(2), s, 'a JS subclass instance');
  assert.equal(list.get(3).get('nested').get(0), p);
  // Look-alikes are not wrappers: a Proxy of one (no private field), an object whose own
  // property holds a real handle-shaped number.
  const proxied = tether.toNative([new Proxy(p, {})]).get(0);
  assert.notEqual(proxied, p);
  const forged = tether.toNative([{ handle: 2 ** 52 + 4096 }]).get(0);
  assert.ok(forged instanceof tether.TetherMap);
  assert.equal(tether.isDisposed({}), false);
  // A revoked Proxy and a disposed wrapper met without their handles: typed errors or plain
  // values, never a crash, and the process goes on.
  const { proxy, revoke } = Proxy.revocable(p, {});
  revoke();
  assert.equal(tether.isDisposed(proxy), false);
  assert.throws(() => tether.toNative([proxy]), TypeError);
  const gone = new Pair('gone', null);
  gone[Symbol.dispose]();
  assert.equal(tether.isDisposed(gone), true);
  assert.throws(() => tether.toNative([gone]), { name: 'TetherRuntimeError', message: /disposed/ });
  assert.throws(() => testing.sum([1, gone]), { name: 'TetherRuntimeError', message: /disposed/ });
  assert.equal(testing.echo(p), p, 'and the wrapper itself still works');
});
