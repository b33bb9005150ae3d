// Type declarations of tether-ffi (index.js / index.mjs).

/** A value that can cross into native code. */
export type NativeInput =
  | null
  | undefined
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | ArrayBufferView
  | ArrayBuffer
  | TetherObject
  | NativeFunction
  | ((...args: any[]) => any)
  | NativeInput[]
  | { [key: string]: NativeInput };

/**
 * A value native code returns: `null` for None, numbers (BigInt beyond +-2^53), strings,
 * Buffers for bytes, and canonical wrappers for objects.
 */
export type NativeValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Buffer
  | TetherObject
  | NativeFunction
  | ((...args: any[]) => any);

/** A native function: a plain callable JS function with `name`, plus `callAsync`. */
export interface NativeFunction {
  (...args: NativeInput[]): any;
  /** The short name as JavaScript spells it ("makePair" for "testing.make_pair"). */
  readonly name: string;
  /** The registered name ("testing.make_pair"). */
  readonly qualifiedName: string;
  /** How many parameters a caller must write (those without a default). */
  readonly length: number;
  /** The declaration, as the core renders it: "add(a: number, b: number): number". */
  readonly signature: string;
  /**
   * Run the function on the libuv thread pool; resolves with the result (or rejects with
   * a TetherError). JS callbacks it makes are run on the JS thread.
   */
  callAsync(...args: NativeInput[]): Promise<any>;
}

/** Base class of every tied native object. */
export class TetherObject {
  /** The native type key, e.g. "testing.Pair". */
  static readonly typeKey: string;
  /** Release this wrapper's native reference now; later use throws TetherRuntimeError. */
  [Symbol.dispose](): void;
  /** `testing.Pair(first=1, second=2)` */
  toString(): string;
}

/** A method of a generated class (on its prototype, or the class for static methods). */
export interface NativeMethod {
  (...args: NativeInput[]): any;
  /** The parameters a caller must write, the receiver left out. */
  readonly length: number;
  /** The declaration without the receiver: "swap(): Pair". */
  readonly signature: string;
  /** Run on the libuv pool: the receiver first (`p.swap.callAsync(p)`), none for static methods. */
  callAsync(...args: NativeInput[]): Promise<any>;
}

/** Reflection of one field of a generated class. */
export interface FieldInfo {
  /** The registry's name (a non-enumerable alias on the prototype when it differs). */
  readonly name: string;
  /** The name as JavaScript spells it (camelCase), the property's name. */
  readonly jsName: string;
  readonly doc: string;
  readonly typeHint: string;
  readonly settable: boolean;
}

/** Reflection of one method of a generated class. */
export interface MethodInfo {
  /** The registry's name (a non-enumerable alias when it differs). */
  readonly name: string;
  /** The name as JavaScript spells it (camelCase), the method's property name. */
  readonly jsName: string;
  readonly doc: string;
  readonly isStatic: boolean;
  /** The parameters a caller must write, the receiver left out. */
  readonly length: number;
  /** The declaration without the receiver: "swap(): Pair". */
  readonly signature: string;
}

/** A class generated from the native type registry. */
export interface TetherClass<T extends TetherObject = TetherObject> {
  new (...args: NativeInput[]): T;
  readonly typeKey: string;
  readonly doc: string;
  /** The constructor's required parameter count. */
  readonly length: number;
  /** The constructor's declaration: "Pair(arg0: any, arg1: any): Pair". */
  readonly signature: string;
  readonly fieldInfo: readonly FieldInfo[];
  readonly methodInfo: readonly MethodInfo[];
  readonly prototype: T;
}

/**
 * A native immutable array (`tether.Array`); `T` is what its items are declared to be
 * (typed bindings say, e.g. `TetherArray<Node>`).
 */
export class TetherArray<T = any> extends TetherObject implements Iterable<T> {
  /** Builds a native array from JS values. */
  constructor(items?: Iterable<NativeInput>);
  readonly length: number;
  /** Item `i` (negative counts from the end); out of range throws TetherIndexError. */
  get(i: number): T;
  toArray(): T[];
  [Symbol.iterator](): Iterator<T>;
}

/** A native immutable insertion-ordered map (`tether.Map`). */
export class TetherMap extends TetherObject implements Iterable<[any, any]> {
  /** From a plain object (string keys) or an iterable of [key, value] pairs. */
  constructor(source?: { [key: string]: NativeInput } | Iterable<[NativeInput, NativeInput]>);
  readonly size: number;
  has(key: NativeInput): boolean;
  /** The value for `key`, or undefined when absent. */
  get(key: NativeInput): any;
  keys(): Iterator<any>;
  values(): Iterator<any>;
  entries(): Iterator<[any, any]>;
  forEach(fn: (value: any, key: any, map: TetherMap) => void, thisArg?: any): void;
  [Symbol.iterator](): Iterator<[any, any]>;
}

/**
 * What `loadModule` returns: the plugin's functions (camelCase, the registry's name a
 * non-enumerable alias) and classes by name.
 */
export interface LoadedModule {
  readonly path: string;
  readonly module: TetherObject;
  readonly functions: { readonly [name: string]: NativeFunction };
  readonly classes: { readonly [name: string]: TetherClass };
  readonly [name: string]: any;
}

/** The native function registered under `name`, or undefined. */
export function getGlobalFunc(name: string): NativeFunction | undefined;
/** Every registered global function name, sorted. */
export function listGlobalFuncs(): string[];
/** Every registered native type. */
export function listTypes(): { index: number; key: string }[];
/** Native objects allocated and not yet freed (process-wide). */
export function liveObjects(): number;
/** The generated class of a registered type key ("testing.Pair"), or undefined. */
export function getClass(key: string): TetherClass | undefined;
/**
 * Functions and classes under `prefix.` by short name, functions camelCase
 * (`namespace("testing").makePair`; the registry's `make_pair` is a non-enumerable alias).
 */
export function namespace(prefix: string): { [name: string]: any };
/**
 * Load a tether plugin (shared library); throws a TetherError if it is not one. `path` is a
 * file path (relative to the working directory); loading the same file again, under any path,
 * returns the same object.
 */
export function loadModule(path: string): LoadedModule;
/**
 * Check bindings generated by tether-bindgen against the loaded plugin: `manifest` is the
 * `[item, hash]` list they recorded. Throws a TetherValueError naming every item added,
 * removed or changed since they were generated (stale bindings: regenerate them).
 */
export function checkBindings(module: LoadedModule, manifest: Iterable<readonly [string, string]>): void;
/** True once `[Symbol.dispose]()` released this wrapper. */
export function isDisposed(obj: TetherObject): boolean;
/** Convert a JS value to native and back (plain arrays/objects become TetherArray/TetherMap). */
export function toNative(value: NativeInput): NativeValue;
/** True in the first environment that loaded the addon (the main thread). */
export const isMainEnv: boolean;
/**
 * The deepest nesting of arrays and objects converted to native Arrays and Maps; a deeper
 * value, or one that contains itself, throws a TetherValueError before reaching native code.
 */
export const MAX_NESTING_DEPTH: number;
/**
 * Every error kind native code raises, as `[name, code]`: an error crosses as its code, which
 * maps to one of the error classes below.
 */
export const errorKinds: readonly (readonly [string, number])[];

/** Fields every native error carries. */
export interface TetherErrorFields {
  /** The native kind: "TypeError", "ValueError", "IndexError", "KeyError", "AttributeError", "RuntimeError", "RustPanic", "MemoryError" or a custom kind. */
  readonly kind: string;
  /** The native backtrace when one was captured (RUST_BACKTRACE=1), else "". */
  readonly backtrace: string;
}

/** Base of native errors; `e instanceof TetherError` holds for every class below. */
export class TetherError extends Error implements TetherErrorFields {
  constructor(message?: string, kind?: string, backtrace?: string);
  readonly kind: string;
  readonly backtrace: string;
}
/** kind "TypeError" (wrong argument type or arity); also a JS TypeError. */
export class TetherTypeError extends TypeError implements TetherErrorFields {
  constructor(message?: string, kind?: string, backtrace?: string);
  readonly kind: string;
  readonly backtrace: string;
}
/** kind "IndexError"; also a JS RangeError. */
export class TetherIndexError extends RangeError implements TetherErrorFields {
  constructor(message?: string, kind?: string, backtrace?: string);
  readonly kind: string;
  readonly backtrace: string;
}
/** kind "ValueError". */
export class TetherValueError extends TetherError {}
/** kind "KeyError". */
export class TetherKeyError extends TetherError {}
/** kind "AttributeError" (also: writing a read-only field). */
export class TetherAttributeError extends TetherError {}
/** kind "RuntimeError" and any unknown kind; also a disposed wrapper used again. */
export class TetherRuntimeError extends TetherError {}
/** kind "RustPanic": native code panicked; the process keeps working. */
export class RustPanic extends TetherError {}
/** kind "MemoryError": a native object could not be allocated; also a JS RangeError. */
export class TetherMemoryError extends RangeError implements TetherErrorFields {
  constructor(message?: string, kind?: string, backtrace?: string);
  readonly kind: string;
  readonly backtrace: string;
}

declare const tether: {
  getGlobalFunc: typeof getGlobalFunc;
  listGlobalFuncs: typeof listGlobalFuncs;
  listTypes: typeof listTypes;
  liveObjects: typeof liveObjects;
  getClass: typeof getClass;
  namespace: typeof namespace;
  loadModule: typeof loadModule;
  checkBindings: typeof checkBindings;
  isDisposed: typeof isDisposed;
  toNative: typeof toNative;
  isMainEnv: boolean;
  MAX_NESTING_DEPTH: number;
  errorKinds: readonly (readonly [string, number])[];
  TetherObject: typeof TetherObject;
  TetherArray: typeof TetherArray;
  TetherMap: typeof TetherMap;
  TetherError: typeof TetherError;
  TetherTypeError: typeof TetherTypeError;
  TetherIndexError: typeof TetherIndexError;
  TetherValueError: typeof TetherValueError;
  TetherKeyError: typeof TetherKeyError;
  TetherAttributeError: typeof TetherAttributeError;
  TetherRuntimeError: typeof TetherRuntimeError;
  RustPanic: typeof RustPanic;
  TetherMemoryError: typeof TetherMemoryError;
};
export default tether;
