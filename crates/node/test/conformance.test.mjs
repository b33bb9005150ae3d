// The conformance scenarios of docs/conformance.md, one test per id.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import util from 'node:util';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

import {
  badAbiPlugin,
  collect,
  expectLiveBackTo,
  samplePlugin,
  settledBaseline,
  testing,
  testPlugin,
  tether,
} from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { Pair } = testing;

// ---- identity ----------------------------------------------------------------------------

test('T01 echo identity', () => {
  const p = testing.make_pair(1, 2);
  assert.equal(testing.echo(p), p);
  for (const v of [0, 7, -3, 2 ** 53 - 1, -(2 ** 53) + 1, 1.5, -0.25, true, false, 's', 'a string longer than seven bytes', '', 'ünïcødé ✓']) {
    assert.equal(testing.echo(v), v);
  }
  assert.equal(testing.echo(2n ** 62n), 2n ** 62n, 'ints beyond 2^53 come back as BigInt');
  assert.equal(testing.echo(5n), 5, 'small BigInt comes back as a number');
  assert.deepEqual(testing.echo(Buffer.from('abc')), Buffer.from('abc'));
  assert.deepEqual(testing.echo(Buffer.from('more than seven bytes')), Buffer.from('more than seven bytes'));
  assert.equal(testing.echo(null), null);
  assert.equal(testing.echo(undefined), null, 'undefined goes in as None, which comes back as null');
});

test('T02 field identity', () => {
  const inner = testing.make_pair('x', 'y');
  const outer = testing.make_pair(inner, 0);
  assert.equal(outer.first, inner);
  assert.equal(outer.first, outer.first);
  const q = new Pair(1, 2);
  outer.first = q;
  assert.equal(outer.first, q);
  assert.equal(outer.first, outer.first);
});

test('T03 container gets return the canonical wrappers', () => {
  const arr = testing.make_array(3);
  for (let i = 0; i < 3; i++) {
    assert.equal(arr.get(i), arr.get(i));
    assert.equal(arr.get(i).first, i);
  }
  assert.equal(arr.get(-1), arr.get(2));
  const [a0, a1, a2] = arr;
  assert.deepEqual([a0, a1, a2], [arr.get(0), arr.get(1), arr.get(2)]);

  const v = new Pair('v', null);
  const w = new Pair('w', null);
  const fromArray = tether.toNative([v, w, 3]);
  assert.ok(fromArray instanceof tether.TetherArray);
  assert.equal(fromArray.get(0), v);
  assert.equal(fromArray.get(1), w);
  const fromObject = tether.toNative({ k: v, n: 1 });
  assert.ok(fromObject instanceof tether.TetherMap);
  assert.equal(fromObject.get('k'), v);
  const made = testing.make_map(['k', 'j'], [v, w]);
  assert.equal(made.get('k'), v);
  assert.equal(made.get('j'), w);
  assert.equal(testing.make_map([v], ['by object key']).get(v), 'by object key');
});

test('T04 a callback receives the caller wrapper', () => {
  const p = new Pair(1, 2);
  let seen;
  testing.call((x) => {
    seen = x;
  }, p);
  assert.equal(seen, p);
  assert.equal(testing.call((x, y) => [x, y], p, 3).get(0), p);
});

test('T05 a JS function passed twice is the same native Function', () => {
  const f = (x) => x + 1;
  assert.equal(testing.echo(f), f);
  assert.equal(testing.echo(f), f);
  testing.stash('T05', f);
  assert.equal(testing.take('T05'), f);
  const pair = testing.make_pair(f, f);
  assert.equal(pair.first, f);
  assert.equal(pair.second, f);
  assert.equal(pair.first(41), 42, 'it is still the callable JS function');
  // A native function round-trips as its own wrapper too.
  assert.equal(testing.echo(testing.echo), testing.echo);
});

test('T06 constructor builds a tied object', () => {
  const p = new Pair(1, 2);
  assert.ok(p instanceof Pair);
  assert.ok(p instanceof tether.TetherObject);
  assert.equal(p.first, 1);
  assert.equal(p.second, 2);
  assert.equal(testing.echo(p), p);
  assert.equal(String(p), 'testing.Pair(first=1, second=2)');
  assert.equal(util.inspect(p), 'testing.Pair { first: 1, second: 2 }');
  assert.equal(util.inspect(new Pair('a', p)), "testing.Pair { first: 'a', second: testing.Pair { first: 1, second: 2 } }");
});

test('T07 reflection builds the class', () => {
  assert.equal(Pair.name, 'Pair');
  assert.equal(Pair.typeKey, 'testing.Pair');
  for (const name of ['first', 'second']) {
    const d = Object.getOwnPropertyDescriptor(Pair.prototype, name);
    assert.equal(typeof d.get, 'function', `${name} has a getter`);
    assert.equal(typeof d.set, 'function', `${name} has a setter`);
  }
  assert.deepEqual(Pair.fieldInfo.map((f) => [f.name, f.settable]), [['first', true], ['second', true]]);
  assert.equal(typeof Pair.prototype.swap, 'function');
  const swapped = new Pair(1, 'b').swap();
  assert.ok(swapped instanceof Pair);
  assert.deepEqual([swapped.first, swapped.second], ['b', 1]);
  const names = tether.listGlobalFuncs();
  for (const n of ['echo', 'make_pair', 'add', 'add3', 'sum', 'call', 'call_in_thread', 'raise_error', 'panic', 'stash',
    'take', 'stash_clear', 'drop_in_thread', 'live_objects', 'make_aligned', 'is_aligned', 'make_array', 'make_map']) {
    assert.ok(names.includes(`testing.${n}`), `listGlobalFuncs has testing.${n}`);
  }
  assert.equal(tether.getGlobalFunc('testing.echo').name, 'echo');
  assert.equal(tether.getGlobalFunc('no.such.function'), undefined);
  // A subtype: reflection lists every member, inherited ones first, and they work.
  const { Triple } = testing;
  assert.equal(Triple.typeKey, 'testing.Triple');
  assert.deepEqual(Triple.fieldInfo.map((f) => [f.name, f.settable]), [['first', true], ['second', true], ['third', true]]);
  assert.deepEqual(Triple.methodInfo.map((m) => m.name), ['swap']);
  const t = new Triple(1, 2, 3);
  assert.ok(t instanceof Pair);
  assert.deepEqual([t.first, t.second, t.third], [1, 2, 3]);
  assert.equal(t.swap().first, 2);
});

// ---- lifetime ----------------------------------------------------------------------------

test('T10 wrapper dies, native lives, refetch works', async () => {
  (() => {
    const p = testing.make_pair('kept', 42);
    testing.stash('T10', p);
  })();
  await collect();
  const again = testing.take('T10');
  assert.ok(again instanceof Pair);
  assert.equal(again.first, 'kept');
  assert.equal(again.second, 42);
  assert.equal(testing.echo(again), again);
});

test('T11 native dies after the wrapper', async () => {
  const baseline = await settledBaseline();
  (() => {
    const p = new Pair(new Pair(1, 2), 'x');
    assert.equal(testing.echo(p), p);
  })();
  await expectLiveBackTo(baseline);
});

test('T12 no growth over 100k create/drop cycles', async () => {
  const baseline = await settledBaseline();
  // The cycles run in a plain function: a suspended async frame may keep its last loop value
  // alive (its registers are saved as they were), which would pin one wrapper.
  const cycles = () => {
    for (let i = 0; i < 10_000; i++) {
      const p = new Pair(i, null);
      if (testing.echo(p) !== p) assert.fail('echo lost identity');
    }
  };
  for (let round = 0; round < 10; round++) {
    cycles();
    await collect(1);
  }
  await expectLiveBackTo(baseline);
});

test('T13 explicit release with Symbol.dispose', async () => {
  const baseline = await settledBaseline();
  let ref;
  let p = (() => {
    const payload = new Payload(13);
    ref = new WeakRef(payload);
    return testing.make_pair(payload, 2);
  })();
  assert.equal(testing.live_objects(), baseline + 2, 'the Pair and the host value it holds');
  p[Symbol.dispose]();
  // Released at once when nothing else holds it: the host value it held goes with it (the
  // wrapper's box lives in the object's memory, which waits for the wrapper's finalizer).
  for (let i = 0; i < 20 && ref.deref() !== undefined; i++) await collect(2);
  assert.equal(ref.deref(), undefined, 'the disposed object released what it held');
  assert.ok(tether.isDisposed(p));
  assert.throws(() => p.first, { name: 'TetherRuntimeError', message: /disposed/ });
  p[Symbol.dispose](); // idempotent
  p = null;
  await expectLiveBackTo(baseline, 'the disposed wrapper gave back its object memory');

  const kept = testing.make_pair('still', 'here');
  testing.stash('T13', kept);
  kept[Symbol.dispose]();
  const refetched = testing.take('T13');
  assert.notEqual(refetched, kept, 'a disposed wrapper is no longer canonical');
  assert.equal(refetched.first, 'still');
  assert.equal(String(kept), 'testing.Pair <disposed>');
});

test('T13 disposed wrappers in their objects\' memory: refetches get boxes of their own, nothing left', async () => {
  const baseline = await settledBaseline();
  for (let i = 0; i < 2000; i++) {
    const p = new Pair(i, null);
    testing.stash('T13b', p);
    p[Symbol.dispose](); // the box stays in the object's memory until p is collected
    const again = testing.take('T13b'); // the object again, while the disposed p lives
    assert.notEqual(again, p);
    assert.equal(again.first, i);
    assert.throws(() => p.first, { name: 'TetherRuntimeError', message: /disposed/ });
    if (i % 2) testing.drop_in_thread(again);
    again[Symbol.dispose]();
  }
  await expectLiveBackTo(baseline, 'every disposed wrapper gave its memory back');
});

test('T14 objects made before the frontend loaded get identity through the side table', () => {
  // The testing functions were made at core init, before the frontend allocator was installed.
  const echo = tether.getGlobalFunc('testing.echo');
  assert.equal(tether.getGlobalFunc('testing.echo'), echo);
  assert.equal(testing.echo(echo), echo);
  testing.stash('T14', echo);
  assert.equal(testing.take('T14'), echo);
  // A Pair holding an init-time function: the field read goes through the side table too.
  const holder = testing.make_pair(echo, tether.getGlobalFunc('testing.add'));
  assert.equal(holder.first, echo);
  assert.equal(holder.second, testing.add);
  assert.equal(testing.make_array(1).get(0).constructor, Pair);
});

test('T15 alignment', async () => {
  const baseline = await settledBaseline();
  (() => {
    for (const a of [8, 16, 32, 64, 4096]) {
      const x = testing.make_aligned(a);
      assert.equal(testing.is_aligned(x), true, `aligned to ${a}`);
      assert.equal(testing.echo(x), x);
    }
  })();
  await expectLiveBackTo(baseline);
});

class Payload {
  constructor(tag) {
    this.tag = tag;
  }
}

test('T16 host values come back as themselves', async () => {
  const baseline = await settledBaseline();
  (() => {
    const o = new Payload(1);
    assert.equal(testing.echo(o), o);
    assert.equal(new Pair(o, null).first, o, 'stored in a field');
    const p = new Pair(null, null);
    p.second = o;
    assert.equal(p.second, o);
    assert.equal(testing.echo([o, 1]).get(0), o, 'an Array item');
    assert.equal(testing.echo({ k: o }).get('k'), o, 'a Map value');
    assert.equal(testing.echo(new Map([['k', o]])).get('k'), o);
    let got;
    testing.call((x) => {
      got = x;
    }, o);
    assert.equal(got, o, 'passed to a callback');
    for (const v of [new Date(0), /re/g, Promise.resolve(1), new WeakMap(), new Error('e'), Object.create(o), new (class {})()]) {
      assert.equal(testing.echo(v), v);
    }
    // Plain objects, arrays, Maps, Sets and bytes still convert.
    assert.equal(testing.echo({ a: 1 }).get('a'), 1);
    assert.equal(testing.echo(Object.create(null)).size, 0);
    assert.ok(!(testing.echo([1]) instanceof Array));
    // A typed parameter names the parameter and the JS type.
    assert.throws(() => testing.add(o, 1), (e) => {
      assert.ok(e instanceof tether.TetherTypeError);
      assert.equal(e.message, "testing.add() argument 'a' must be int, not Payload");
      return true;
    });
    // Another language's host value is a TypeError naming both languages, not a crash.
    assert.throws(() => testing.foreign_value('Thing'), (e) => {
      assert.ok(e instanceof tether.TetherTypeError);
      assert.equal(
        e.message,
        'Thing (a Testing value) held by native code cannot be used from JavaScript: host values only go back to their own language',
      );
      return true;
    });
  })();
  await expectLiveBackTo(baseline);
});

test('T16 host values live while native code holds them, and are released after', async () => {
  const baseline = await settledBaseline();
  let ref;
  (() => {
    const o = new Payload(2);
    ref = new WeakRef(o);
    testing.stash('T16', o);
  })();
  await collect();
  assert.ok(ref.deref() instanceof Payload, 'native code holds it');
  assert.equal(testing.take('T16'), ref.deref());
  await collect();
  assert.equal(ref.deref(), undefined, 'released when the last native reference went');
  // Released from a foreign native thread: the JS thread deletes the reference.
  (() => {
    const o = new Payload(3);
    ref = new WeakRef(o);
    testing.drop_in_thread(new Pair(o, null));
  })();
  // (deref() keeps its target alive to the end of the job: collect over two jobs each time)
  for (let i = 0; i < 20 && ref.deref() !== undefined; i++) await collect(2);
  assert.equal(ref.deref(), undefined);
  // No growth over 100k round trips.
  (() => {
    const o = new Payload(4);
    for (let i = 0; i < 100_000; i++) assert.equal(testing.echo(o), o);
    ref = new WeakRef(o);
  })();
  await collect();
  assert.equal(ref.deref(), undefined);
  await expectLiveBackTo(baseline);
});

test('T16 a host value from another env is a TypeError there', async () => {
  const out = await runWorker('host_value.mjs', {});
  assert.equal(out.sameInWorker, true);
  assert.throws(() => testing.take('T16-worker'), (e) => {
    assert.ok(e instanceof tether.TetherTypeError);
    assert.match(e.message, /^a JS Payload held by native code belongs to another JS environment/);
    return true;
  });
});

test('T17 weak references to wrappers', async () => {
  const baseline = await settledBaseline();
  let ref;
  const finalized = [];
  const registry = new FinalizationRegistry((token) => finalized.push(token));
  (() => {
    const p = new Pair(1, 2);
    ref = new WeakRef(p);
    registry.register(p, 'pair');
    testing.stash('T17', p);
  })();
  for (let i = 0; i < 20 && (ref.deref() !== undefined || finalized.length === 0); i++) await collect(2);
  // The weak reference dies with its wrapper, though the native object lives on.
  assert.equal(ref.deref(), undefined);
  assert.deepEqual(finalized, ['pair']);
  const back = testing.take('T17');
  assert.equal(back.first, 1);
  assert.equal(new WeakRef(back).deref(), back);
  await expectLiveBackTo(baseline + 1);
});

class LabelledPair extends Pair {
  label = 'initial';

  constructor(first, second, label) {
    super(first, second);
    this.label = label;
  }

  describe() {
    return `${this.label}:${this.first}`;
  }
}

test('T18 a subclass instance keeps its class across revival', async () => {
  const baseline = await settledBaseline();
  let ref;
  (() => {
    const p = new LabelledPair(1, 2, 'x');
    assert.ok(p instanceof LabelledPair && p instanceof Pair);
    assert.equal(p.describe(), 'x:1');
    assert.equal(testing.echo(p), p);
    assert.equal(new Pair(p, null).first, p, 'every return is that instance while it lives');
    testing.stash('T18', p);
    ref = new WeakRef(p);
  })();
  for (let i = 0; i < 20 && ref.deref() !== undefined; i++) await collect(2);
  assert.equal(ref.deref(), undefined);
  const back = testing.take('T18');
  // The prototype is kept; own properties (class fields included) are not (docs/node.md).
  assert.ok(back instanceof LabelledPair);
  assert.equal(back.describe(), 'undefined:1');
  assert.deepEqual(Object.keys(back), []);
  assert.equal(testing.echo(back), back);
  await expectLiveBackTo(baseline + 1);
});

// ---- threads -----------------------------------------------------------------------------

function runWorker(file, workerData) {
  return new Promise((resolve, reject) => {
    const w = new Worker(path.join(here, 'workers', file), { workerData });
    let result;
    w.on('message', (m) => {
      result = m;
    });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`worker exited with ${code}`))));
  });
}

test('T20 concurrent fetch, drop and refetch from 8 threads', async () => {
  const baseline = await settledBaseline();
  const workers = 8;
  (() => {
    const shared = testing.make_array(16);
    for (let i = 0; i < workers; i++) testing.stash(`T20-${i}`, shared);
    testing.stash('T20-main', shared);
  })();
  const mainLoop = (async () => {
    const shared = testing.take('T20-main');
    for (let round = 0; round < 200; round++) {
      const i = round % 16;
      const item = shared.get(i);
      assert.equal(shared.get(i), item);
      assert.equal(testing.echo(item), item);
      assert.equal(await testing.echo.callAsync(item), item);
      assert.equal(item.first, i);
      if (round % 50 === 0) await collect(1);
    }
  })();
  const results = await Promise.all([
    mainLoop,
    ...Array.from({ length: workers }, (_, i) => runWorker('identity.cjs', { key: `T20-${i}`, rounds: 400 })),
  ]);
  for (const r of results.slice(1)) {
    assert.equal(r.mismatches, 0, 'no duplicate wrappers inside a worker');
    assert.equal(r.isMainEnv, false);
  }
  await expectLiveBackTo(baseline);
});

test('T21 a JS callback called from a new native thread', async () => {
  // Through callAsync the JS thread is free, so the call is marshalled to it.
  const p = new Pair(1, 2);
  assert.equal(await testing.call_in_thread.callAsync((x) => x, p), p);
  assert.equal(await testing.call_in_thread.callAsync((a, b) => a * b, 6, 7), 42);
  // Synchronously the JS thread is blocked in call_in_thread: a clear error, not a deadlock.
  assert.throws(() => testing.call_in_thread((x) => x, 1), {
    name: 'TetherRuntimeError',
    message: /blocked in a synchronous native call.*callAsync/,
  });
  // A native function needs no JS thread, so it works synchronously.
  assert.equal(testing.call_in_thread(testing.add, 2, 3), 5);
});

test('T22 last reference dropped on a foreign native thread', async () => {
  const baseline = await settledBaseline();
  (() => {
    testing.stash('T22', testing.make_pair(testing.make_pair(1, 2), 'x'));
    testing.call_in_thread(testing.stash_clear);
    testing.drop_in_thread(testing.make_pair(3, 4));
    const f = (x) => x;
    testing.stash('T22-callback', f);
    testing.call_in_thread(testing.stash_clear);
  })();
  await expectLiveBackTo(baseline);
});

// ---- faults ------------------------------------------------------------------------------

test('T30 wrong argument type', () => {
  assert.throws(() => testing.add(1, 'x'), (e) => {
    assert.ok(e instanceof TypeError);
    assert.ok(e instanceof tether.TetherTypeError);
    assert.ok(e instanceof tether.TetherError);
    assert.equal(e.kind, 'TypeError');
    assert.equal(e.message, "testing.add() argument 'b' must be int, not str");
    return true;
  });
  // The addon's own conversion failures name the parameter too (core's argument_message).
  assert.throws(() => testing.add(1, Symbol('s')), (e) => {
    assert.ok(e instanceof tether.TetherTypeError);
    assert.ok(e.message.startsWith("testing.add() argument 'b': "), e.message);
    return true;
  });
  // Found by the fast-check fuzzer (cargo xtask harden): a Proxy of a Map or Set, or an object
  // that only inherits from Map.prototype, passes `instanceof` but cannot be iterated; it used to
  // escape as a plain JS TypeError from Map.prototype.entries.
  for (const fake of [new Proxy(new Map([[1, 2]]), {}), new Proxy(new Set([1]), {}), Object.create(Map.prototype)]) {
    assert.throws(() => testing.echo(fake), (e) => {
      assert.ok(e instanceof tether.TetherTypeError, `${e?.constructor?.name}: ${e?.message}`);
      assert.match(e.message, /not a real (Map|Set)/);
      return true;
    });
    assert.throws(() => testing.echo([1, { k: fake }]), tether.TetherTypeError);
  }
  assert.equal(testing.echo(new Map([[1, 2]])).get(1), 2);
});

test('T31 wrong arity', () => {
  assert.throws(() => testing.add(1), { name: 'TetherTypeError', message: "testing.add() missing 1 required argument: 'b'" });
  assert.throws(() => testing.add(1, 2, 3), { message: 'testing.add() takes 2 positional arguments but 3 were given' });
});

test('T32 a Rust panic', () => {
  assert.throws(() => testing.panic('boom'), (e) => {
    assert.ok(e instanceof tether.RustPanic);
    assert.equal(e.kind, 'RustPanic');
    assert.equal(e.message, 'boom');
    assert.equal(typeof e.backtrace, 'string');
    return true;
  });
});

test('T33 a callback that throws', () => {
  const err = new Error('from JS');
  assert.throws(() => testing.call(() => {
    throw err;
  }), (e) => e === err);
  const typeErr = new TypeError('bad type in JS');
  assert.throws(() => testing.call(() => {
    throw typeErr;
  }), (e) => e === typeErr);
  // A tether error thrown by a nested native call keeps its class through the callback.
  assert.throws(() => testing.call(() => testing.raise_error('KeyError', 'inner')), { name: 'TetherKeyError', message: 'inner' });
  // A thrown non-Error value comes back as itself too.
  assert.throws(() => testing.call(() => {
    throw 'plain string'; // eslint-disable-line no-throw-literal
  }), (e) => e === 'plain string');
});

test('T34 error kinds map to documented classes', () => {
  const expected = {
    TypeError: [tether.TetherTypeError, TypeError],
    ValueError: [tether.TetherValueError, tether.TetherError],
    IndexError: [tether.TetherIndexError, RangeError],
    KeyError: [tether.TetherKeyError, tether.TetherError],
    AttributeError: [tether.TetherAttributeError, tether.TetherError],
    RuntimeError: [tether.TetherRuntimeError, tether.TetherError],
    RustPanic: [tether.RustPanic, tether.TetherError],
    MemoryError: [tether.TetherMemoryError, RangeError],
  };
  // The core's kinds (constants.rs ERROR_KINDS) are exactly the ones mapped here.
  assert.deepEqual(Object.keys(expected).sort(), tether.errorKinds.map(([name]) => name).sort());
  // Each kind crosses as its code (the error's `code` cell): one distinct integer each.
  const codes = tether.errorKinds.map(([, code]) => code);
  assert.ok(codes.every(Number.isInteger));
  assert.equal(new Set(codes).size, codes.length);
  for (const [kind, [cls, base]] of Object.entries(expected)) {
    assert.throws(() => testing.raise_error(kind, `msg ${kind}`), (e) => {
      assert.ok(e instanceof cls, `${kind} -> ${cls.name}`);
      assert.ok(e instanceof base);
      assert.ok(e instanceof tether.TetherError);
      assert.ok(e instanceof Error);
      assert.equal(e.kind, kind);
      assert.equal(e.message, `msg ${kind}`);
      return true;
    });
  }
  assert.throws(() => testing.raise_error('SomethingElse', 'x'), (e) => e instanceof tether.TetherRuntimeError && e.kind === 'SomethingElse');
});

test('T35 a disposed handle used again', () => {
  const p = new Pair(1, 2);
  p[Symbol.dispose]();
  assert.throws(() => testing.echo(p), { name: 'TetherRuntimeError', message: /disposed/ });
  assert.throws(() => p.swap(), { name: 'TetherRuntimeError', message: /disposed/ });
  assert.throws(() => {
    p.first = 3;
  }, { name: 'TetherRuntimeError', message: /disposed/ });
});

test('T36 loadModule faults', () => {
  assert.throws(() => tether.loadModule('/no/such/plugin.so'), (e) => e instanceof tether.TetherError && /plugin\.so/.test(e.message));
  const notALibrary = path.join(here, 'helpers.mjs');
  assert.throws(() => tether.loadModule(notALibrary), (e) => e instanceof tether.TetherError && e.message.length > 0);
  const noInit = path.resolve(here, '..', 'tether.node'); // a shared library without tether_module_init
  assert.ok(fs.existsSync(noInit));
  assert.throws(() => tether.loadModule(noInit), (e) => e instanceof tether.TetherError && /not a tether module/.test(e.message));
  assert.ok(fs.existsSync(badAbiPlugin), `bad-ABI plugin built at ${badAbiPlugin}`);
  assert.throws(() => tether.loadModule(badAbiPlugin), (e) => e instanceof tether.TetherError && /ABI/i.test(e.message));
});

test('T37 the process keeps working after faults', async () => {
  const baseline = await settledBaseline();
  for (const fault of [
    () => testing.add(1, 'x'),
    () => testing.add(1),
    () => testing.panic('again'),
    () => testing.call(() => {
      throw new Error('cb');
    }, new Pair(1, 2)),
    () => testing.raise_error('ValueError', 'v'),
    () => tether.loadModule('/no/such/plugin.so'),
    () => testing.call_in_thread((x) => x, new Pair(3, 4)),
    () => testing.take('never stashed'),
  ]) {
    assert.throws(fault);
  }
  await assert.rejects(testing.panic.callAsync('async panic'), { name: 'RustPanic' });
  assert.equal(testing.add(2, 3), 5);
  assert.equal(testing.echo('ok'), 'ok');
  await expectLiveBackTo(baseline);
});

const nested = (depth, leaf) => {
  for (let i = 0; i < depth; i++) leaf = [leaf];
  return leaf;
};

test('T38 cyclic and too deep containers throw a TetherValueError', async () => {
  const baseline = await settledBaseline();
  const limit = tether.MAX_NESTING_DEPTH;
  assert.equal(limit, 100);
  const selfish = [];
  selfish.push(selfish);
  const throughObject = { items: [] };
  throughObject.items.push(throughObject);
  const throughMap = new Map();
  throughMap.set('me', [throughMap]);
  const throughSet = new Set();
  throughSet.add(throughSet);
  const cycle = new RegExp(`contains itself.*at most ${limit} levels`);
  for (const cyclic of [selfish, throughObject, throughMap, throughSet, [1, [2, selfish]]]) {
    assert.throws(() => testing.echo(cyclic), (e) => e instanceof tether.TetherValueError && cycle.test(e.message));
  }
  const deep = new RegExp(`more than ${limit} levels deep`);
  for (const tooDeep of [nested(100_000, 1), nested(limit + 1, 1), nested(limit, { k: [1] })]) {
    assert.throws(() => testing.echo(tooDeep), (e) => e instanceof tether.TetherValueError && deep.test(e.message));
  }
  assert.throws(() => testing.call(() => selfish), tether.TetherValueError);
  assert.throws(() => new Pair(selfish, 1), tether.TetherValueError);
  const shared = [1, 2];
  assert.deepEqual(testing.echo([shared, shared]).get(1).toArray(), [1, 2]);
  let out = testing.echo(nested(limit - 1, [7]));
  let levels = 0;
  while (out instanceof tether.TetherArray) {
    levels += 1;
    out = out.get(0);
  }
  assert.equal(levels, limit);
  assert.equal(testing.add(2, 3), 5);
  await expectLiveBackTo(baseline);
});

test('T39 huge and odd values convert or throw typed errors', async () => {
  const baseline = await settledBaseline();
  const big = Buffer.alloc(100 * 1024 * 1024, 7);
  assert.ok(testing.echo(big).equals(big));
  const many = Array.from({ length: 1_000_000 }, (_, i) => i);
  assert.equal(testing.echo(many).length, 1_000_000);
  assert.throws(() => testing.echo(2n ** 200n), (e) => e instanceof tether.TetherValueError && /64-bit/.test(e.message));
  assert.ok(Number.isNaN(testing.echo(NaN)));
  assert.ok(Object.is(testing.echo(-0), -0));
  assert.equal(testing.echo(Infinity), Infinity);
  // A lone surrogate cannot be UTF-8: it converts as U+FFFD, as TextEncoder does.
  assert.equal(testing.echo('lone \ud800 surrogate'), 'lone \ufffd surrogate');
  assert.throws(() => testing.echo(Symbol('s')), tether.TetherTypeError);
  const shared = new Uint8Array(new SharedArrayBuffer(4));
  shared.set([1, 2, 3, 4]);
  assert.ok(testing.echo(shared).equals(Buffer.from([1, 2, 3, 4])), 'a view of a SharedArrayBuffer is bytes');
  assert.throws(() => testing.make_array(2 ** 40), tether.TetherValueError, 'no allocation of 2^40 objects');
  const holes = [];
  holes.length = 2 ** 32 - 1;
  assert.throws(() => testing.echo(holes), (e) => e instanceof tether.TetherValueError && /too large to convert/.test(e.message));
  assert.equal(testing.add(2, 3), 5);
  await expectLiveBackTo(baseline);
});

// ---- shutdown ----------------------------------------------------------------------------

test('T40 the process exits cleanly with live objects', () => {
  const script = path.join(here, 'workers', 'exit-with-live-objects.mjs');
  const run = spawnSync(process.execPath, ['--expose-gc', script], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.signal, null, `no crash: ${run.stderr}`);
  assert.equal(run.status, 0, `exit code 0: ${run.stderr}`);
  assert.match(run.stdout, /exiting with \d+ live objects/);
});

test('T41 a native thread calling back into a terminated worker gets a clear error', () => {
  const script = path.join(here, 'workers', 'callback-into-terminated-worker.mjs');
  // No native backtrace: symbolizing one is slow, and the script waits only so long.
  const env = { ...process.env, RUST_LIB_BACKTRACE: '0' };
  const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 120_000, env });
  assert.equal(run.signal, null, `no crash: ${run.stderr}`);
  assert.equal(run.status, 0, `exit code 0: ${run.stderr}`);
  assert.equal(run.stdout, 'worker terminated\n');
  assert.match(
    run.stderr,
    /testing\.call_in_background: stopped after 0 calls: RuntimeError: the JS environment that owns this callback has shut down/,
  );
  // process.exit() while a native thread's callback waits for the main thread: it is answered
  // with an error at exit (before, the exit hung joining Node's threadpool).
  const exiting = path.join(here, 'workers', 'exit-while-a-callback-waits.mjs');
  const exit = spawnSync(process.execPath, [exiting], { encoding: 'utf8', timeout: 60_000, env });
  assert.equal(exit.error?.code, undefined, `no hang: ${exit.error}`);
  assert.equal(exit.signal, null, `no crash: ${exit.stderr}`);
  assert.equal(exit.status, 7, `the exit code asked for: ${exit.stderr}`);
  assert.equal(exit.stdout, 'exiting\n');
});

test('T42 an allocation failure is a MemoryError and the process keeps working', async () => {
  const baseline = await settledBaseline();
  const fails = (call, pending = 1) => {
    assert.equal(testing.fail_allocations(pending), 0);
    assert.throws(call, (e) => {
      assert.ok(e instanceof tether.TetherMemoryError && e instanceof RangeError && e instanceof tether.TetherError);
      assert.equal(e.kind, 'MemoryError');
      assert.match(e.message, /out of memory/);
      return true;
    });
    return testing.fail_allocations(0); // what the failure left pending
  };
  assert.equal(fails(() => testing.make_pair(1, 2)), 0, "the native function's object");
  assert.equal(fails(() => new Pair(1, 2)), 0, 'a constructor');
  assert.equal(fails(() => testing.echo([1, 2, 3])), 0, 'an array converted to an Array');
  assert.equal(fails(() => testing.echo('a string longer than seven bytes')), 0, "a string's copy");
  assert.equal(fails(() => testing.echo(Buffer.from('more than seven bytes'))), 0, "a Buffer's copy");
  assert.equal(fails(() => testing.echo({ key: 1 })), 0, 'an object converted to a Map');
  // In a scope of its own: the callback's Function keeps its memory while the JS function
  // lives (the function holds a weak reference to it), so the callback must become garbage.
  (() => {
    const cb = () => [1, 2];
    assert.equal(fails(() => testing.call(cb)), 0, "the callback's own Function");
    testing.stash('T42-cb', cb); // keeps the callback's Function alive: the next failure is its result's
    assert.equal(fails(() => testing.call(cb)), 0, "a callback's result");
    assert.deepEqual([...testing.call(cb)], [1, 2]);
  })();
  assert.equal(fails(() => testing.make_array(3), 2), 1, 'two armed: the first one raised');
  testing.fail_allocations(3);
  for (let i = 0; i < 3; i++) assert.throws(() => testing.make_pair(1, 2), tether.TetherMemoryError);
  assert.equal(testing.make_pair(1, 2).first, 1);
  assert.throws(() => testing.fail_allocations(-1), /argument 'n' must not be negative/);
  testing.stash_clear();
  await expectLiveBackTo(baseline);
});

// ---- modules -----------------------------------------------------------------------------

test('T50 loadModule exposes plugin functions and types', () => {
  assert.ok(fs.existsSync(samplePlugin), `sample plugin built at ${samplePlugin}`);
  const sample = tether.loadModule(samplePlugin);
  assert.equal(tether.loadModule(samplePlugin), sample, 'the same file loads as the same module');
  const viaOtherPath = path.join(path.dirname(samplePlugin), '..', path.basename(path.dirname(samplePlugin)), path.basename(samplePlugin));
  assert.equal(tether.loadModule(viaOtherPath), sample, 'another path to the same file');
  assert.equal(sample.greet('node'), 'hello, node');
  assert.equal(sample.functions.greet, sample.greet);
  const { Counter } = sample;
  assert.equal(Counter.typeKey, 'sample.Counter');
  const c = sample.make_counter(5);
  assert.ok(c instanceof Counter);
  assert.equal(c.count, 5);
  assert.equal(c.increment(), 6);
  assert.equal(c.count, 6);
  assert.equal(testing.echo(c), c);
  const made = new Counter(10);
  assert.equal(made.count, 10);
  assert.equal(testing.echo(made), made);
  assert.throws(() => {
    made.count = 3;
  }, { name: 'TetherAttributeError' });
  assert.equal(tether.loadModule(samplePlugin).greet, sample.greet, 'loading twice gives the same functions');
});

/** The registry's index for `key`. */
function typeIndexOf(key) {
  const found = tether.listTypes().find((t) => t.key === key);
  assert.ok(found, `${key} is registered`);
  return found.index;
}

/** Assert `fn` throws an instance of `cls` whose message matches every pattern; returns it. */
function throwsWith(fn, cls, ...patterns) {
  let caught;
  assert.throws(fn, (e) => {
    caught = e;
    return e instanceof cls;
  });
  for (const p of patterns) assert.match(caught.message, p);
  return caught;
}

test('T51 an init that panics or fails is a typed error, and the process keeps working', async () => {
  const panics = testPlugin('tether_test_plugin_init_panics');
  const fails = testPlugin('tether_c_init_fails');
  const e = throwsWith(() => tether.loadModule(panics), tether.RustPanic, /initialising module/,
    /libtether_test_plugin_init_panics/, /the plugin panicked: init_panics: refusing to start/);
  assert.equal(e.kind, 'RustPanic');
  throwsWith(() => tether.loadModule(fails), tether.TetherRuntimeError, /cplugin init refused to start/);
  const baseline = await settledBaseline();
  throwsWith(() => tether.loadModule(panics), tether.RustPanic, /remembered/);
  throwsWith(() => tether.loadModule(fails), tether.TetherRuntimeError, /refused to start.*remembered/);
  assert.equal(tether.getGlobalFunc('init_fails.leftover')(), 7, 'what the failed init registered stays callable');
  assert.equal(testing.add(2, 3), 5);
  await expectLiveBackTo(baseline);
});

test('T52 an existing type key with another layout is a ValueError naming the key', async () => {
  throwsWith(() => tether.loadModule(testPlugin('tether_test_plugin_conflict')), tether.TetherValueError,
    /type key "testing.Pair" is already registered with fields \["first", "second"\]/, /\["left", "right"\]/);
  const hostile = tether.loadModule(testPlugin('tether_c_hostile'));
  const point = hostile.register_type('hostile.Point', 'tether.Object', 'x,y');
  const baseline = await settledBaseline();
  assert.equal(hostile.register_type('hostile.Point', 'tether.Object', 'x,y'), point, 'the same layout again is fine');
  assert.equal(hostile.register_type('testing.Pair', 'tether.Object', 'first,second'), typeIndexOf('testing.Pair'));
  throwsWith(() => hostile.register_type('hostile.Point', 'tether.Object', 'x'), tether.TetherValueError,
    /"hostile.Point" is already registered with fields \["x", "y"\]/);
  throwsWith(() => hostile.register_type('testing.Triple', 'tether.Object', 'first,second,third'), tether.TetherValueError,
    /"testing.Triple" is already registered with parent "testing.Pair"/);
  let p = new Pair(1, 2);
  assert.deepEqual([p.first, p.second], [1, 2], 'the registered Pair is untouched');
  p = null;
  await expectLiveBackTo(baseline);
});

test('T53 an out-of-range type index from a C plugin is a ValueError, not a crash', async () => {
  const hostile = tether.loadModule(testPlugin('tether_c_hostile'));
  const baseline = await settledBaseline();
  for (const kind of [-1, 9, 63, 100, 1_000_000]) {
    throwsWith(() => hostile.bad_result(kind), tether.TetherValueError,
      new RegExp(`the result of hostile.bad_result has type index ${kind}, which is neither`));
    throwsWith(() => hostile.bad_array(kind), tether.TetherValueError, new RegExp(`make_array: item 0 has type index ${kind}`));
    throwsWith(() => hostile.bad_call(testing.echo, kind), tether.TetherValueError,
      new RegExp(`call_function: argument 1 has type index ${kind}`));
  }
  throwsWith(() => hostile.bad_header(typeIndexOf('tether.Array')), tether.TetherValueError, /header says index 3/);
  assert.equal(hostile.ok(), 42);
  assert.equal(testing.add(2, 3), 5);
  await expectLiveBackTo(baseline);
});

test('T54 loadModule of a directory is a clear error', () => {
  throwsWith(() => tether.loadModule(os.tmpdir()), tether.TetherValueError, /it is a directory, not a shared library file/);
  assert.equal(testing.add(1, 1), 2);
});

test('T55 a bare file name is relative to the working directory', () => {
  throwsWith(() => tether.loadModule('libc.so.6'), tether.TetherValueError, /no such file in the working directory/);
  const sample = tether.loadModule(samplePlugin);
  const cwd = process.cwd();
  process.chdir(path.dirname(samplePlugin));
  try {
    assert.equal(tether.loadModule(path.basename(samplePlugin)), sample);
  } finally {
    process.chdir(cwd);
  }
});

test('T56 the same plugin under two paths', async () => {
  const sample = tether.loadModule(samplePlugin);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tether-T56-'));
  try {
    const link = path.join(dir, 'libsample_link.so');
    fs.symlinkSync(samplePlugin, link);
    assert.equal(tether.loadModule(link), sample, 'a link to the same file is the same module');
    const copy = path.join(dir, 'libsample_copy.so');
    fs.copyFileSync(samplePlugin, copy);
    const other = tether.loadModule(copy);
    assert.notEqual(other, sample, 'a copy is another file');
    const baseline = await settledBaseline();
    assert.equal(other.Counter, sample.Counter, 'the same key with the same layout is one type');
    let c = other.make_counter(4);
    assert.ok(c instanceof sample.Counter);
    assert.equal(c.count, 4);
    assert.equal(c.increment(), 5);
    assert.equal(testing.echo(c), c);
    assert.equal(tether.loadModule(copy), other);
    c = null;
    await expectLiveBackTo(baseline);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- signatures ----------------------------------------------------------------------------

test('T60 signatures are readable', () => {
  assert.equal(testing.add.signature, 'add(a: number, b: number): number');
  assert.equal(testing.add.length, 2);
  assert.equal(Pair.signature, 'Pair(first: any, second: any): Pair');
  assert.equal(Pair.length, 2);
  assert.equal(Pair.prototype.swap.signature, 'swap(): Pair', 'the receiver is left out');
});

test('T61 defaults fill what is left out', () => {
  assert.equal(testing.greet('ann'), 'hello, ann');
  assert.equal(testing.greet('ann', 'hi'), 'hi, ann');
  assert.equal(testing.greet.length, 1);
});
