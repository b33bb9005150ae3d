// ESM entry of tether-ffi: the same API as index.js.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const tether = require('./index.js');

export const {
  getGlobalFunc,
  listGlobalFuncs,
  listTypes,
  liveObjects,
  getClass,
  namespace,
  loadModule,
  checkBindings,
  isDisposed,
  toNative,
  isMainEnv,
  MAX_NESTING_DEPTH,
  errorKinds,
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
} = tether;
export default tether;
