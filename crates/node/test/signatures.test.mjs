// Signatures on the JS side: fn.length and fn.signature, defaults filled, names as JavaScript
// spells them (the registry's snake_case kept as a non-enumerable alias), methods' callAsync,
// and messages that name the parameter.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { samplePlugin, tether, testing } from './helpers.mjs';

const { Pair, Triple } = testing;

test('fn.length counts the required parameters; fn.signature is core\'s rendering', () => {
  assert.equal(testing.add.length, 2);
  assert.equal(testing.add.signature, 'add(a: number, b: number): number');
  assert.equal(testing.echo.length, 1);
  assert.equal(testing.echo.signature, 'echo(x: any): any');
  assert.equal(testing.makePair.length, 2);
  assert.equal(testing.makePair.signature, 'makePair(first: any, second: any): Pair');
  assert.equal(testing.makePair.name, 'makePair');
  // A default makes a parameter optional: not counted, `?` in the signature.
  assert.equal(testing.greet.length, 1);
  assert.equal(testing.greet.signature, 'greet(name: string, greeting?: string): string');
  // A packed function with no declared arity keeps a best-effort signature.
  assert.equal(testing.call.length, 0);
  assert.match(testing.call.signature, /^call\(.*\): any$/);
});

test('methods and constructors have length and signature, the receiver left out', () => {
  const swap = Pair.prototype.swap;
  assert.equal(swap.length, 0);
  assert.equal(swap.signature, 'swap(): Pair');
  assert.equal(Triple.prototype.swap, swap, 'inherited, not redefined');
  assert.equal(Pair.length, 2);
  assert.match(Pair.signature, /^Pair\(\w+: any, \w+: any\): Pair$/);
  assert.equal(Triple.length, 3);
  const swapInfo = Pair.methodInfo.find((m) => m.name === 'swap');
  assert.equal(swapInfo.signature, 'swap(): Pair');
  assert.equal(swapInfo.length, 0);
});

test('defaults the caller leaves out are filled from the signature', async () => {
  assert.equal(testing.greet('Ada'), 'hello, Ada');
  assert.equal(testing.greet('Ada', 'hi'), 'hi, Ada');
  assert.equal(testing.greet.call(null, 'Bob'), 'hello, Bob');
  assert.equal(await testing.greet.callAsync('Cy'), 'hello, Cy');
  // A wrapper argument travels as a handle in the call frame; the filled call still finds it.
  const p = new Pair(1, 2);
  assert.equal(testing.greet(String(p.first)), 'hello, 1');
});

test('a missing required argument, and too many, are worded by core\'s binding', () => {
  assert.throws(() => testing.greet(), {
    name: 'TetherTypeError',
    message: "testing.greet() missing 1 required argument: 'name'",
  });
  assert.throws(() => testing.greet('a', 'b', 'c'), {
    name: 'TetherTypeError',
    message: 'testing.greet() takes from 1 to 2 positional arguments but 3 were given',
  });
  // callAsync binds and converts on the JS thread: argument errors throw there, synchronously.
  assert.throws(() => testing.greet.callAsync(), { message: "testing.greet() missing 1 required argument: 'name'" });
  // Without defaults too, a call of another count is bound by the signature.
  assert.throws(() => testing.add(1), { message: "testing.add() missing 1 required argument: 'b'" });
});

test('argument errors name the parameter, on every path', () => {
  assert.throws(() => testing.greet(3), { message: "testing.greet() argument 'name' must be str, not int" });
  assert.throws(() => testing.greet('a', 3), { message: "testing.greet() argument 'greeting' must be str, not int" });
  // The addon's own conversion failure (a Symbol), through a call, callAsync and a constructor.
  assert.throws(() => testing.echo(Symbol('s')), { message: /^testing\.echo\(\) argument 'x': / });
  assert.throws(() => testing.add.callAsync(1, Symbol('s')), { message: /^testing\.add\(\) argument 'b': / });
  assert.throws(() => new Pair(1, Symbol('s')), { name: 'TetherTypeError', message: /^testing\.Pair\(\) argument 'second': / });
});

test('names are camelCase, the registry\'s snake_case a non-enumerable alias', () => {
  assert.equal(typeof testing.makePair, 'function');
  assert.equal(testing.make_pair, testing.makePair);
  assert.equal(testing.raiseError, testing.raise_error);
  assert.equal(testing.callInThread, testing.call_in_thread);
  const keys = Object.keys(testing);
  assert.ok(keys.includes('makePair') && keys.includes('liveObjects'), keys.join());
  assert.ok(!keys.includes('make_pair') && !keys.includes('live_objects'), keys.join());
  assert.equal(Object.getOwnPropertyDescriptor(testing, 'make_pair').enumerable, false);
  // Plugin modules spell their functions the same way.
  const mod = tether.loadModule(samplePlugin);
  assert.deepEqual(Object.keys(mod.functions).sort(), ['greet', 'makeCounter', 'scale']);
  assert.equal(mod.functions.make_counter, mod.functions.makeCounter);
  assert.equal(mod.make_counter, mod.makeCounter);
  assert.equal(typeof mod.makeCounter, 'function');
  assert.equal(Object.getOwnPropertyDescriptor(mod, 'make_counter').enumerable, false);
});

test('methods have callAsync, the receiver first', async () => {
  const p = new Pair(1, 'b');
  const swapped = await p.swap.callAsync(p);
  assert.ok(swapped instanceof Pair);
  assert.equal(swapped.first, 'b');
  assert.equal(swapped.second, 1);
  await assert.rejects(Pair.prototype.swap.callAsync(42), { name: 'TetherTypeError', message: /swap\(\) argument/ });
});

test('a plugin class: camelCase methods and fields, snake_case aliases, a method default', async () => {
  const { Counter } = tether.loadModule(samplePlugin);
  assert.equal(Counter.length, 1);
  assert.equal(Counter.signature, 'Counter(start: number): Counter');
  const c = new Counter(3);
  const incrementBy = Counter.prototype.incrementBy;
  assert.equal(incrementBy.name, 'incrementBy');
  assert.equal(incrementBy.length, 0);
  assert.equal(incrementBy.signature, 'incrementBy(by?: number): number');
  assert.equal(c.increment_by, incrementBy, 'the registry name is an alias of the same method');
  assert.equal(c.incrementBy(), 4, 'by defaults to 1');
  assert.equal(c.incrementBy(2), 6);
  assert.equal(await c.incrementBy.callAsync(c), 7);
  assert.equal(await c.incrementBy.callAsync(c, 3), 10);
  assert.throws(() => c.incrementBy('x'), { message: "sample.Counter.increment_by() argument 'by' must be int, not str" });
  assert.equal(c.isEven, true);
  assert.equal(c.is_even, true);
  const proto = Object.getOwnPropertyDescriptors(Counter.prototype);
  assert.equal(proto.isEven.enumerable, true);
  assert.equal(proto.is_even.enumerable, false);
  assert.equal(proto.incrementBy.enumerable, false, 'methods stay non-enumerable, as class methods are');
  assert.equal(String(c), 'sample.Counter(count=10, isEven=true)');
  assert.deepEqual(Counter.fieldInfo.map((f) => [f.name, f.jsName]), [['count', 'count'], ['is_even', 'isEven']]);
  assert.deepEqual(Counter.methodInfo.map((m) => [m.jsName, m.isStatic]), [
    ['increment', false],
    ['parse', true],
    ['incrementBy', false],
  ]);
  assert.equal(Counter.parse('ff', 16).count, 255, 'a static method is a function of the class');
  assert.equal(Counter.parse('12').count, 12, 'radix defaults to 10');
  assert.throws(() => Counter.parse('zz'), { message: /"zz" is not a base-10 number/ });
});
