'use strict';
// tether-ffi: native objects with one canonical JS wrapper each.
// The addon (tether.node) ties objects and calls functions; this file builds the JS classes
// from the native type registry and the error classes the addon throws.

const native = require('./tether.node');
const { types: nodeTypes } = require('node:util');

/** Passed by the addon to class constructors when it makes a wrapper itself. */
const TOKEN = Object.freeze(Object.create(null));
const TYPE_INDEX = Symbol('tether.typeIndex');
const FIELDS = Symbol('tether.fields');
const IS_TETHER_ERROR = Symbol('tether.error');
const inspectCustom = Symbol.for('nodejs.util.inspect.custom');
const disposeSymbol = Symbol.dispose ?? Symbol.for('nodejs.dispose');

// Constants from their one source (tether-core's constants.rs, the addon's call frame).
const {
  TYPE_OBJECT, TYPE_ARRAY, TYPE_MAP, FRAME_HANDLES, FRAME_ANY_COUNT, FRAME_WORDS, FRAME_FLOATS_OFFSET,
  FRAME_RESULT_IN_FRAME,
} = native.constants;

// ---- errors ------------------------------------------------------------------------------

function initError(err, kind, backtrace) {
  Object.defineProperty(err, 'kind', { value: kind, enumerable: true });
  Object.defineProperty(err, 'backtrace', { value: backtrace ?? '', enumerable: false });
  Object.defineProperty(err, IS_TETHER_ERROR, { value: true });
}

/** Base of every error raised by native code (`instanceof TetherError` holds for all). */
class TetherError extends Error {
  constructor(message, kind = 'RuntimeError', backtrace = '') {
    super(message);
    initError(this, kind, backtrace);
  }
  static [Symbol.hasInstance](x) {
    if (this !== TetherError) return Function.prototype[Symbol.hasInstance].call(this, x);
    return x != null && typeof x === 'object' && x[IS_TETHER_ERROR] === true;
  }
}
/** kind "TypeError": a wrong argument type or arity. Also a JS `TypeError`. */
class TetherTypeError extends TypeError {
  constructor(message, kind = 'TypeError', backtrace = '') {
    super(message);
    initError(this, kind, backtrace);
  }
}
/** kind "IndexError": an index out of range. Also a JS `RangeError`. */
class TetherIndexError extends RangeError {
  constructor(message, kind = 'IndexError', backtrace = '') {
    super(message);
    initError(this, kind, backtrace);
  }
}
/** kind "MemoryError": a native object could not be allocated. Also a JS `RangeError` (as V8's
 * own allocation failures are); the process keeps working. */
class TetherMemoryError extends RangeError {
  constructor(message, kind = 'MemoryError', backtrace = '') {
    super(message);
    initError(this, kind, backtrace);
  }
}
class TetherValueError extends TetherError {}
class TetherKeyError extends TetherError {}
class TetherAttributeError extends TetherError {}
class TetherRuntimeError extends TetherError {}
/** kind "RustPanic": native code panicked; the process keeps working. */
class RustPanic extends TetherError {}

for (const cls of [TetherError, TetherTypeError, TetherIndexError, TetherValueError, TetherKeyError,
  TetherAttributeError, TetherRuntimeError, RustPanic, TetherMemoryError]) {
  Object.defineProperty(cls.prototype, 'name', { value: cls.name, writable: true, configurable: true });
}

/** Each error code's class (codes and names from the core: `native.errorKinds`). */
const CLASS_BY_NAME = {
  TypeError: TetherTypeError,
  IndexError: TetherIndexError,
  ValueError: TetherValueError,
  KeyError: TetherKeyError,
  AttributeError: TetherAttributeError,
  RuntimeError: TetherRuntimeError,
  RustPanic,
  MemoryError: TetherMemoryError,
};
const ERROR_CLASSES = new Map(native.errorKinds.map(([name, code]) => [code, CLASS_BY_NAME[name] ?? TetherRuntimeError]));

function makeError(code, kind, message, backtrace) {
  const cls = ERROR_CLASSES.get(code) ?? TetherRuntimeError;
  const err = new cls(message, kind, backtrace);
  // The stack starts at the native call, not in this helper.
  Error.captureStackTrace?.(err, makeError);
  return err;
}

// ---- objects -----------------------------------------------------------------------------

function describe(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `[Function ${value.qualifiedName ?? value.name}]`;
  return String(value);
}

/**
 * The handle of `a` when it is a tether wrapper (set by TetherObject), or of a function's
 * native side when it has one (`fnHandles`: a wrapper handle for a native function's shim, a
 * negative Link handle for a JS function passed to native code before), else undefined.
 * Handed to the addon by `_setup` (tie.rs `wrapper_of`).
 */
let handleOf;

/**
 * Functions -> handles (see handleOf). A Link's handle names a box the addon wraps onto the
 * function, freed by that wrap's finalizer, so it lives as long as its function; only this
 * file reads it, and only the addon (`rememberCallable`) and `makeShim` write it. The handle
 * is a private field stamped onto the function (a class whose base constructor returns the
 * object it is given), which V8 reads like any field, where a WeakMap lookup hashes the
 * function on every call; it is invisible to reflection. A function that refuses the field
 * keeps its handle in `fnHandles` instead.
 */
let fnHandleOf;
let setFnHandle;
const fnHandles = new WeakMap();

class ReturnsItsArgument {
  constructor(target) {
    return target;
  }
}

class FunctionHandle extends ReturnsItsArgument {
  #fnHandle;

  constructor(f, handle) {
    super(f);
    this.#fnHandle = handle;
  }

  static {
    fnHandleOf = (f) => (#fnHandle in f ? f.#fnHandle : fnHandles.get(f));
    setFnHandle = (f, handle) => {
      if (#fnHandle in f) {
        f.#fnHandle = handle;
        return;
      }
      try {
        new FunctionHandle(f, handle);
      } catch {
        fnHandles.set(f, handle);
      }
    };
  }
}

/** Called by the addon when it links JS function `f` to its native side (callback.rs). */
function rememberCallable(f, handle) {
  setFnHandle(f, handle);
}

/** Base class of every tied native object. */
/** Ids of the JS subclasses of generated classes (their native registration, once each). */
const subclassIds = new Map();

function subclassId(ctor) {
  let id = subclassIds.get(ctor);
  if (id === undefined) {
    id = native.registerSubclass(ctor);
    subclassIds.set(ctor, id);
  }
  return id;
}

class TetherObject {
  /**
   * A number naming this wrapper's native side, and the only link from the wrapper to it (the
   * addon puts no `napi_wrap` on wrappers). Function shims pass it to the addon in place of
   * the wrapper; the addon asks `handleOf` for it where it meets a wrapper without it.
   * Private: only code in this class body can read or forge it.
   */
  #handle;

  constructor(...args) {
    if (args[0] === TOKEN) {
      this.#handle = args[1];
      return;
    }
    const typeIndex = new.target[TYPE_INDEX];
    if (typeIndex === undefined) {
      throw new TetherTypeError(`${new.target.name} cannot be constructed directly`);
    }
    // The handle of `this` when it became the new object's wrapper; the constructor may
    // also hand back an object that already has a wrapper.
    // Wrapper arguments travel as handles in the call frame, as in a shim's call.
    const n = args.length;
    let mask = 0;
    for (let i = 0; i < n && i < FRAME_HANDLES; i++) {
      const h = handleOf(args[i]);
      if (h !== undefined && h >= 0) {
        frameFloats[1 + i] = h;
        mask |= 1 << i;
        args[i] = 0;
      }
    }
    frameWords[0] = mask;
    const made =
      n === 2 ? construct(this, typeIndex, args[0], args[1]) : n === 1 ? construct(this, typeIndex, args[0]) : construct(this, typeIndex, ...args);
    if (typeof made !== 'number') return made;
    this.#handle = made;
    // A JS subclass: the object remembers it, so a refetch after this wrapper is collected
    // makes an instance of the subclass again (running only the base constructor).
    if (!Object.hasOwn(new.target, TYPE_INDEX)) native.setSubclass(this, subclassId(new.target));
  }

  static {
    handleOf = (a) =>
      typeof a === 'object'
        ? a !== null && #handle in a
          ? a.#handle
          : undefined
        : typeof a === 'function'
          ? fnHandleOf(a)
          : undefined;
  }

  /** Release this wrapper's native reference now; later use throws a TetherRuntimeError. */
  [disposeSymbol]() {
    native.dispose(this);
  }

  toString() {
    const key = this.constructor.typeKey;
    if (native.isDisposed(this)) return `${key} <disposed>`;
    const fields = this.constructor[FIELDS] ?? [];
    return `${key}(${fields.map((f) => `${f}=${describe(this[f])}`).join(', ')})`;
  }

  [inspectCustom](depth, options, inspect) {
    const key = this.constructor.typeKey;
    if (native.isDisposed(this)) return `${key} <disposed>`;
    const fields = this.constructor[FIELDS] ?? [];
    if (fields.length === 0) return `${key} {}`;
    if (depth < 0) return `${key} {...}`;
    const inner = { ...options, depth: options.depth == null ? null : options.depth - 1 };
    const body = fields.map((f) => `${f}: ${inspect(this[f], inner)}`).join(', ');
    return `${key} { ${body} }`;
  }
}
TetherObject.typeKey = 'tether.Object';

let arrayGetItem, arraySize, newMap, mapGetItem, mapContains, mapSize, mapKeys, mapValues;

/** A native immutable array (`tether.Array`). `new TetherArray(iterable)` builds one. */
class TetherArray extends TetherObject {
  constructor(items, handle) {
    if (items === TOKEN) {
      super(TOKEN, handle);
      return;
    }
    return native.toNative(Array.from(items ?? []));
  }
  get length() {
    return arraySize(this);
  }
  get(i) {
    return arrayGetItem(this, i);
  }
  *[Symbol.iterator]() {
    const n = arraySize(this);
    for (let i = 0; i < n; i++) yield arrayGetItem(this, i);
  }
  toArray() {
    return Array.from(this);
  }
  toString() {
    return native.isDisposed(this) ? 'tether.Array <disposed>' : `tether.Array(${this.toArray().map(describe).join(', ')})`;
  }
  [inspectCustom](depth, options, inspect) {
    if (native.isDisposed(this)) return 'tether.Array <disposed>';
    return `tether.Array ${inspect(this.toArray(), { ...options, depth: options.depth == null ? null : options.depth - 1 })}`;
  }
}

/** A native immutable insertion-ordered map (`tether.Map`). `new TetherMap(objectOrEntries)`. */
class TetherMap extends TetherObject {
  constructor(source, handle) {
    if (source === TOKEN) {
      super(TOKEN, handle);
      return;
    }
    if (source == null) return native.toNative({});
    if (typeof source[Symbol.iterator] === 'function') {
      const keys = [];
      const values = [];
      for (const [k, v] of source) {
        keys.push(k);
        values.push(v);
      }
      return makeMap(keys, values);
    }
    return native.toNative(source);
  }
  get size() {
    return mapSize(this);
  }
  has(key) {
    return mapContains(this, key);
  }
  /** The value for `key`, or undefined when absent. */
  get(key) {
    return mapContains(this, key) ? mapGetItem(this, key) : undefined;
  }
  keys() {
    return mapKeys(this)[Symbol.iterator]();
  }
  values() {
    return mapValues(this)[Symbol.iterator]();
  }
  *entries() {
    const keys = mapKeys(this);
    const values = mapValues(this);
    const n = keys.length;
    for (let i = 0; i < n; i++) yield [keys.get(i), values.get(i)];
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  forEach(fn, thisArg) {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
  toString() {
    if (native.isDisposed(this)) return 'tether.Map <disposed>';
    return `tether.Map(${Array.from(this.entries(), ([k, v]) => `${describe(k)}: ${describe(v)}`).join(', ')})`;
  }
  [inspectCustom](depth, options, inspect) {
    if (native.isDisposed(this)) return 'tether.Map <disposed>';
    return `tether.Map ${inspect(new Map(this.entries()), { ...options, depth: options.depth == null ? null : options.depth - 1 })}`;
  }
}

function makeMap(keys, values) {
  return newMap(...keys.flatMap((k, i) => [k, values[i]]));
}

const classes = new Map();

function shortName(key) {
  const dot = key.lastIndexOf('.');
  return dot < 0 ? key : key.slice(dot + 1);
}

/**
 * Define `name` (as JavaScript spells it, from the addon: core's `language_name`) on
 * `target`, with the registry's own name, when it differs, as a non-enumerable alias of it.
 */
function defineNamed(target, jsName, name, descriptor) {
  Object.defineProperty(target, jsName, descriptor);
  if (name !== jsName) Object.defineProperty(target, name, { ...descriptor, enumerable: false });
}

function defineField(cls, field) {
  const { name, jsName, getter, setter } = field;
  const key = cls.typeKey;
  defineNamed(cls.prototype, jsName, name, {
    get() {
      return getter(this);
    },
    set(value) {
      if (setter === null) throw new TetherAttributeError(`field ${key}.${jsName} is read-only`, 'AttributeError');
      setter(this, value);
    },
    enumerable: true,
    configurable: true,
  });
}

function defineMethod(cls, method) {
  const { jsName, name, func, isStatic, length, signature } = method;
  const impl = isStatic
    ? { [jsName]: (...args) => func(...args) }[jsName]
    : { [jsName](...args) { return func(this, ...args); } }[jsName];
  // `obj.method.callAsync(obj, ...args)`: the receiver first, as `Function.prototype.call` takes it.
  const callAsync = isStatic ? (...args) => func.callAsync(...args) : (self, ...args) => func.callAsync(self, ...args);
  Object.defineProperty(impl, 'length', { value: length, configurable: true });
  Object.defineProperty(impl, 'signature', { value: signature, configurable: true });
  Object.defineProperty(impl, 'callAsync', { value: callAsync, writable: true, configurable: true });
  defineNamed(isStatic ? cls : cls.prototype, jsName, name, { value: impl, writable: true, configurable: true });
}

function buildClass(typeIndex) {
  if (typeIndex === TYPE_OBJECT) return TetherObject;
  if (typeIndex === TYPE_ARRAY) return TetherArray;
  if (typeIndex === TYPE_MAP) return TetherMap;
  const info = native.typeInfo(typeIndex);
  if (info === undefined) throw new TetherTypeError(`no registered type has index ${typeIndex}`);
  const parent = info.parent >= TYPE_OBJECT ? classFor(info.parent) : TetherObject;
  const name = shortName(info.key);
  const cls = { [name]: class extends parent {} }[name];
  Object.defineProperty(cls, TYPE_INDEX, { value: typeIndex });
  Object.defineProperty(cls, 'typeKey', { value: info.key, enumerable: true });
  Object.defineProperty(cls, 'doc', { value: info.doc });
  // `new Pair(first, second)`: the constructor's required parameters and declaration.
  Object.defineProperty(cls, 'length', { value: info.constructorLength, configurable: true });
  Object.defineProperty(cls, 'signature', { value: info.constructorSignature, configurable: true });
  // Reflection shows every member, inherited ones first, as every frontend does (core types::all_fields).
  Object.defineProperty(cls, 'fieldInfo', { value: Object.freeze(info.allFields.map((f) => Object.freeze({ ...f }))) });
  Object.defineProperty(cls, 'methodInfo', { value: Object.freeze(info.allMethods.map((m) => Object.freeze({ ...m }))) });
  const inherited = parent[FIELDS] ?? [];
  Object.defineProperty(cls, FIELDS, { value: [...inherited, ...info.fields.map((f) => f.jsName)] });
  for (const field of info.fields) defineField(cls, field);
  for (const method of info.methods) defineMethod(cls, method);
  return cls;
}

/** The JS class for a native type index (built once per type, from reflection). */
function classFor(typeIndex) {
  let cls = classes.get(typeIndex);
  if (cls === undefined) {
    cls = buildClass(typeIndex);
    classes.set(typeIndex, cls);
  }
  return cls;
}

/**
 * How the addon converts a non-array object that is not bytes: `[isMap, items]` for a JS Map
 * (entries) or Set (values); undefined for a plain object (prototype Object.prototype or null),
 * which becomes a Map of its own properties; otherwise the name of its constructor: the object
 * crosses as a host value and comes back as itself. A Proxy of a Map or Set, or an object that
 * only inherits from their prototype, passes `instanceof` but has no entries to read
 * (Map.prototype.entries refuses it): a TetherTypeError.
 */
function classifyObject(value) {
  const map = value instanceof Map;
  if (map || value instanceof Set) {
    if (map ? nodeTypes.isMap(value) : nodeTypes.isSet(value)) return [map, Array.from(value)];
    const what = map ? 'Map' : 'Set';
    const how = nodeTypes.isProxy(value) ? `a Proxy of a ${what}` : `an object that inherits from ${what}.prototype`;
    throw new TetherTypeError(`cannot pass ${how}: it is not a real ${what}`);
  }
  const proto = Object.getPrototypeOf(value);
  if (proto === null || proto === Object.prototype) return undefined;
  const ctor = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value;
  return typeof ctor === 'function' && typeof ctor.name === 'string' && ctor.name !== '' ? ctor.name : 'Object';
}

/**
 * The call frame shared with the addon (call.rs `CallFrame`, one per env): `frameWords` are
 * [mask of the arguments that are wrappers passed as handles, argument count, the argument a
 * call returned (when `raw` returns undefined), mask of the arguments that are JS functions
 * passed with their Link handle]; `frameFloats` are [the called function's handle, then
 * argument i's handle at 1 + i].
 */
const [callFrame, construct] = native._setup(
  classFor,
  makeError,
  TOKEN,
  classifyObject,
  makeShim,
  rememberCallable,
  invokeCallable,
  handleOf,
);
// An exiting env runs no more callbacks queued by other threads: from 'exit' on, they fail at
// once with a clear error instead of waiting for a JS thread that has left (Node joins its
// threadpool, where such a caller may wait, before the process ends).
process.on('exit', () => native._exiting());
const frameWords = new Int32Array(callFrame, 0, FRAME_WORDS);
const frameFloats = new Float64Array(callFrame, FRAME_FLOATS_OFFSET, 1 + FRAME_HANDLES);

/**
 * How the addon calls a JS callback `f` (callback.rs): a wrapper result's handle goes back in
 * the frame as well (`returned` = FRAME_RESULT_IN_FRAME), which spares the addon a
 * `napi_unwrap` of the result. The frame is free: the native call that runs this has read it.
 */
function invokeCallable(f, a, b, c) {
  const n = arguments.length - 1;
  const r =
    n === 0 ? f() : n === 1 ? f(a) : n === 2 ? f(a, b) : n === 3 ? f(a, b, c) : f(...Array.prototype.slice.call(arguments, 1));
  if (typeof r === 'object' && r !== null) {
    const h = handleOf(r);
    if (h !== undefined) {
      frameFloats[0] = h;
      frameWords[2] = FRAME_RESULT_IN_FRAME;
      return r;
    }
  }
  // Written after f returned, every time: a call f made may have left its own callback's
  // mark in the shared frame (`call(() => { call(() => x); return 5; })` returned x).
  frameWords[2] = 0;
  return r;
}

/** Where frameArgument puts a number's and a Link argument's bit, above the wrapper bits. */
const NUMBER_SHIFT = 8;
const LINK_SHIFT = 16;
const ARGUMENT_BITS = (1 << NUMBER_SHIFT) - 1;
const NUMBER_BITS = (1 << (LINK_SHIFT - NUMBER_SHIFT)) - 1;

/**
 * The shim of native function `raw` (arity `arity`, own wrapper handle `fh`): see makeShim.
 * Self-contained apart from the names in SHIM_SCOPE, so that `ownShimFactory` can compile a
 * copy of its source per native function.
 */
function shimFactory(raw, arity, fh, binds, rawOneWrapper) {
  /**
   * Argument `i`, value `v`, into the frame when it can travel there; returns its bit: `1 << i`
   * for a wrapper (its handle: the mask), `1 << (NUMBER_SHIFT + i)` for a number (its value,
   * which spares the addon a Node-API read), `1 << (LINK_SHIFT + i)` for a JS function with a
   * Link (its Link's handle), 0 for none of them.
   */
  function frameArgument(i, v) {
    if (typeof v === 'number') {
      frameFloats[1 + i] = v;
      return 1 << (NUMBER_SHIFT + i);
    }
    const h = handleOf(v);
    if (h === undefined) return 0;
    frameFloats[1 + i] = h;
    return h < 0 ? 1 << (LINK_SHIFT + i) : 1 << i;
  }

  let shim;
  const general = function (...args) {
    const n = args.length;
    // The caller's arguments, copied before the first wrapper is replaced by its placeholder.
    let orig = args;
    let mask = 0;
    let links = 0;
    for (let i = 0; i < n && i < FRAME_HANDLES; i++) {
      const h = handleOf(args[i]);
      if (h !== undefined) {
        frameFloats[1 + i] = h;
        if (h < 0) {
          links |= 1 << i;
        } else {
          if (mask === 0) orig = args.slice();
          mask |= 1 << i;
          args[i] = 0;
        }
      }
    }
    frameFloats[0] = fh;
    frameWords[0] = mask;
    frameWords[1] = n | FRAME_ANY_COUNT; // the addon checks this count against the signature
    frameWords[3] = links;
    frameWords[4] = 0;
    // Small counts without a spread call. One argument: `invokeCallable` as the receiver,
    // which a call with one JS function for argument takes for its callbacks (call.rs
    // `call_of_one_callable`); the other calls ignore the receiver.
    const r =
      n === 1
        ? raw.call(invokeCallable, args[0])
        : n === 2
          ? raw(args[0], args[1])
          : n === 3
            ? raw(args[0], args[1], args[2])
            : raw(...args);
    return r === undefined ? orig[frameWords[2]] : r;
  };
  // A wrapper argument travels as its handle alone (a placeholder 0 in its place); a JS
  // function with a Link travels as itself, its Link handle beside it.
  if (arity === 1 || arity < 0) {
    // A variadic function called with one argument takes this path too; when it has a
    // signature its count is marked as the general path's (the addon binds it).
    const one = arity < 0 && binds ? 1 | FRAME_ANY_COUNT : 1;
    // One wrapper argument of a function of arity one goes to the addon's entry for that
    // call alone (`echo(x)`, `p.first`: call.rs `one_wrapper_callback`).
    const rawWrapper = arity === 1 ? rawOneWrapper : raw;
    shim = function (a) {
      if (arguments.length !== 1) return general(...arguments);
      frameFloats[0] = fh;
      frameWords[1] = one;
      if (typeof a === 'number') {
        frameFloats[1] = a;
        frameWords[0] = 0;
        frameWords[3] = 0;
        frameWords[4] = 1;
        const r = raw();
        return r === undefined ? a : r;
      }
      const ha = handleOf(a);
      frameWords[4] = 0;
      if (ha === undefined) {
        frameWords[0] = 0;
        frameWords[3] = 0;
        const r = raw.call(invokeCallable, a);
        return r === undefined ? a : r;
      }
      if (ha < 0) {
        frameFloats[1] = ha;
        frameWords[0] = 0;
        frameWords[3] = 1;
        const r = raw.call(invokeCallable, a);
        return r === undefined ? a : r;
      }
      frameWords[0] = 1;
      frameWords[3] = 0;
      frameFloats[1] = ha;
      const r = rawWrapper();
      return r === undefined ? a : r;
    };
  } else if (arity === 2) {
    shim = function (a, b) {
      if (arguments.length !== 2) return general(...arguments);
      const bits = frameArgument(0, a) | frameArgument(1, b);
      const mask = bits & ARGUMENT_BITS;
      const inFrame = mask | ((bits >>> NUMBER_SHIFT) & NUMBER_BITS);
      frameFloats[0] = fh;
      frameWords[0] = mask;
      frameWords[1] = 2;
      frameWords[3] = bits >>> LINK_SHIFT;
      frameWords[4] = (bits >>> NUMBER_SHIFT) & NUMBER_BITS;
      const r = inFrame === 3 ? raw() : raw(inFrame & 1 ? 0 : a, inFrame & 2 ? 0 : b);
      return r === undefined ? (frameWords[2] === 0 ? a : b) : r;
    };
  } else if (arity === 3) {
    shim = function (a, b, c) {
      if (arguments.length !== 3) return general(...arguments);
      const bits = frameArgument(0, a) | frameArgument(1, b) | frameArgument(2, c);
      const mask = bits & ARGUMENT_BITS;
      const inFrame = mask | ((bits >>> NUMBER_SHIFT) & NUMBER_BITS);
      frameFloats[0] = fh;
      frameWords[0] = mask;
      frameWords[1] = 3;
      frameWords[3] = bits >>> LINK_SHIFT;
      frameWords[4] = (bits >>> NUMBER_SHIFT) & NUMBER_BITS;
      const r = inFrame === 7 ? raw() : raw(inFrame & 1 ? 0 : a, inFrame & 2 ? 0 : b, inFrame & 4 ? 0 : c);
      if (r !== undefined) return r;
      const i = frameWords[2];
      return i === 0 ? a : i === 1 ? b : c;
    };
  } else {
    shim = general;
  }
  return shim;
}

/** What shimFactory's source reads from this module, handed to each compiled copy. */
const SHIM_SCOPE = {
  invokeCallable,
  frameFloats,
  frameWords,
  handleOf,
  FRAME_HANDLES,
  FRAME_ANY_COUNT,
  NUMBER_SHIFT,
  LINK_SHIFT,
  ARGUMENT_BITS,
  NUMBER_BITS,
};

/**
 * shimFactory compiled from its own copy of the source for the function named `key`. V8
 * keeps type feedback per function literal, shared by every closure made from it: with one
 * literal, every function of an arity shared its shim's feedback (and every shim shared
 * frameArgument's), so a program that called `make_pair(x, null)` a million times made
 * `add3(1, 2, 3)` polymorphic and no longer inlined (33 -> 39 ns, 45 with those objects
 * alive: the full bench run's W3). A distinct source text (the key in a comment) is a
 * distinct literal. Where code generation from strings is disallowed, the shared factory.
 */
function ownShimFactory(key) {
  try {
    const names = Object.keys(SHIM_SCOPE);
    const source = `// tether shim of ${key.replace(/[^\w.$ -]/g, '_')}\n'use strict';\nreturn ${shimFactory.toString()};`;
    return new Function(...names, source)(...names.map((n) => SHIM_SCOPE[n]));
  } catch {
    return shimFactory;
  }
}

/**
 * The JS function users call for native function `raw`, whose own wrapper has handle `fh`
 * (the shim becomes that wrapper). Wrapper arguments travel as their handles in the call
 * frame (a placeholder in their place, or nothing when all arguments are wrappers), which
 * spares the addon a Node-API read per argument; `undefined` from `raw` means "the result
 * is argument frameWords[2]". `raw` is reachable only through the shim and the frame only
 * from this file, so neither can be forged. Arities 1-3 get a monomorphic body; a call with
 * another argument count takes the general path (where the addon fills the defaults the
 * caller left out). `length` (what a caller writes without defaults) and `signature` (core's
 * rendering) come from the function's signature; `binds`: it has one, so a call whose count
 * differs from its arity is bound to it. `rawOneWrapper` (functions of arity one): the
 * addon's entry for a call whose one argument is a wrapper.
 */
function makeShim(raw, arity, name, fh, length, signature, binds, rawOneWrapper) {
  const shim = ownShimFactory(`${name} ${fh}`)(raw, arity, fh, binds, rawOneWrapper);
  setFnHandle(shim, fh);
  Object.defineProperty(shim, 'name', { value: name, configurable: true });
  Object.defineProperty(shim, 'length', { value: length, configurable: true });
  Object.defineProperty(shim, 'signature', { value: signature, configurable: true });
  return shim;
}

arrayGetItem = native.getGlobalFunc('tether.ArrayGetItem');
arraySize = native.getGlobalFunc('tether.ArraySize');
newMap = native.getGlobalFunc('tether.Map');
mapGetItem = native.getGlobalFunc('tether.MapGetItem');
mapContains = native.getGlobalFunc('tether.MapContains');
mapSize = native.getGlobalFunc('tether.MapSize');
mapKeys = native.getGlobalFunc('tether.MapKeys');
mapValues = native.getGlobalFunc('tether.MapValues');
classes.set(TYPE_ARRAY, TetherArray);
classes.set(TYPE_MAP, TetherMap);
Object.defineProperty(TetherArray, TYPE_INDEX, { value: TYPE_ARRAY });
Object.defineProperty(TetherMap, TYPE_INDEX, { value: TYPE_MAP });
TetherArray.typeKey = 'tether.Array';
TetherMap.typeKey = 'tether.Map';

// ---- public API --------------------------------------------------------------------------

/** The native function registered under `name`, or undefined. */
function getGlobalFunc(name) {
  return native.getGlobalFunc(String(name));
}

/** Every registered global function name, sorted. */
function listGlobalFuncs() {
  return native.listGlobalFuncs();
}

/** The class of the registered type `key` (e.g. "testing.Pair"), or undefined. */
function getClass(key) {
  const entry = native.listTypes().find((t) => t.key === key);
  return entry === undefined ? undefined : classFor(entry.index);
}

/**
 * `out[jsName] = value`, enumerable, and the registry's `name`, when it differs, as a
 * non-enumerable alias (`makePair` and `make_pair`).
 */
function setNamed(out, jsName, name, value) {
  defineNamed(out, jsName, name, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The functions and classes whose names start with `prefix + "."`, by short name as
 * JavaScript spells it (`namespace("testing").makePair`; the registry's `make_pair` is a
 * non-enumerable alias), and classes by type name: `new (namespace("testing").Pair)(1, 2)`.
 */
function namespace(prefix) {
  const out = {};
  const lead = `${prefix}.`;
  for (const name of native.listGlobalFuncs()) {
    const short = name.slice(lead.length);
    if (name.startsWith(lead) && !short.includes('.')) {
      setNamed(out, native.jsName(short), short, native.getGlobalFunc(name));
    }
  }
  for (const { index, key } of native.listTypes()) {
    if (key.startsWith(lead) && !key.slice(lead.length).includes('.')) {
      out[key.slice(lead.length)] = classFor(index);
    }
  }
  return out;
}

/** Modules by canonical path: loading a file again, under any path, gives the same object. */
const loadedModules = new Map();

/**
 * Load a plugin (a shared library exporting `tether_module_init`). Returns its functions (by
 * name as JavaScript spells it, the registry's name a non-enumerable alias) and classes,
 * also under `.functions` and `.classes`.
 */
function loadModule(path) {
  const loaded = native.loadModule(String(path));
  const known = loadedModules.get(loaded.path);
  if (known !== undefined) return known;
  const out = { path: loaded.path, module: loaded.module, functions: {}, classes: {} };
  loadedModules.set(loaded.path, out);
  for (const [name, fn, jsName] of loaded.functions) {
    setNamed(out.functions, jsName, name, fn);
    setNamed(out, jsName, name, fn);
  }
  for (const index of loaded.types) {
    const cls = classFor(index);
    out.classes[cls.name] = cls;
    out[cls.name] = cls;
  }
  return out;
}

/**
 * Check bindings generated by tether-bindgen against the plugin `module` (what `loadModule`
 * returned): `manifest` is the `[item, hash]` list they recorded. Throws a TetherValueError
 * naming every item added, removed or changed since they were generated (stale bindings).
 */
function checkBindings(module, manifest) {
  const lines = Array.from(manifest, ([item, hash]) => `${item}\t${hash}`);
  native.checkBindings(String(module.path), lines.join('\n'));
}

/** True once `[Symbol.dispose]()` released this wrapper. */
function isDisposed(obj) {
  return native.isDisposed(obj);
}

/** Convert a JS value to native and back: plain arrays/objects become TetherArray/TetherMap. */
function toNative(value) {
  return native.toNative(value);
}

module.exports = {
  getGlobalFunc,
  listGlobalFuncs,
  listTypes: native.listTypes,
  liveObjects: native.liveObjects,
  getClass,
  namespace,
  loadModule,
  checkBindings,
  isDisposed,
  toNative,
  isMainEnv: native.isMainEnv,
  MAX_NESTING_DEPTH: native.constants.MAX_NESTING_DEPTH,
  errorKinds: native.errorKinds,
  TetherObject,
  TetherArray,
  TetherMap,
  TetherError,
  TetherTypeError,
  TetherIndexError,
  TetherValueError,
  TetherKeyError,
  TetherAttributeError,
  TetherRuntimeError,
  RustPanic,
  TetherMemoryError,
};
