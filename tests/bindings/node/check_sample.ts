// The sample plugin's generated TypeScript declarations (tests/plugins/sample), used as a
// consumer would: `tsc --strict` must accept this file, which is then compiled and run
// (cargo xtask test --only examples, part "stale bindings"). Keyword escaping: the registry's
// `import` method and its `class` parameter are `import_(class_)`; nullability: Optional
// results and fields are `T | null` and are narrowed before use; defaults: a parameter with a
// default may be left out; a static method (`Counter.parse`) is `static` on its class.
import { Counter, Names, greet, makeCounter, scale } from 'sample';
import { TetherValueError } from 'tether-ffi';

function check(label: string, holds: boolean): void {
  if (!holds) {
    throw new Error(`sample bindings (node): ${label} does not hold`);
  }
}

const counter = new Counter(5);
const six: number | bigint = counter.incrementBy();
check('incrementBy() uses the plugin default (1)', six === 6);
check('incrementBy(3)', counter.incrementBy(3) === 9);
check('greet', greet('bindings') === 'hello, bindings');
check('scale', scale(6, 7) === 42);
const made: Counter = makeCounter(1);
check('makeCounter returns a Counter', made instanceof Counter && made.count === 1 && !made.isEven);

const parsed: Counter = Counter.parse('ff', 16);
check('the static Counter.parse', parsed instanceof Counter && parsed.count === 255);
check('Counter.parse leaves radix to its default (10)', Counter.parse('12').count === 12);
try {
  Counter.parse('zz');
  check('Counter.parse("zz") throws', false);
} catch (e) {
  check('Counter.parse("zz") throws a TetherValueError', e instanceof TetherValueError && /"zz" is not a base-10 number/.test(e.message));
}

const names = new Names();
const missing: number | bigint | null = names.import_(2);
check('import_(class_) is null without a label', missing === null && names.label === null);
names.label = 'abc';
const found = names.import_(2);
if (found === null) {
  throw new Error('sample bindings (node): import_(2) is null with a label');
}
check('import_(2) is the label length plus 2', Number(found) === 5);
const label: string | null = names.label;
check('the label field', label === 'abc');
names.label = null;
check('setting the label to null', names.label === null);
check('new Names(label)', new Names('x').label === 'x');
console.log('sample bindings (node): ok');
