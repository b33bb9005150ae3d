// Shared helpers of the node:test suite (not a test file itself).
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as tether from '../index.mjs';

export { tether };
export const testing = tether.namespace('testing');

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../../..');

/** The sample test plugin (built by `cargo xtask test --only node`). */
export const samplePlugin =
  process.env.TETHER_TEST_PLUGIN ?? path.join(repoRoot, 'target/debug/libtether_test_plugin.so');
/** The test plugin built for another ABI major. */
export const badAbiPlugin =
  process.env.TETHER_TEST_PLUGIN_BAD_ABI ?? path.join(repoRoot, 'target/debug/libtether_test_plugin_bad_abi.so');

/** A test plugin by file stem (`tether_test_plugin_conflict`, `tether_c_hostile`): from
 * TETHER_TEST_PLUGIN_DIR (set by `cargo xtask test`, which builds them all), else target/debug. */
export function testPlugin(stem) {
  return path.join(process.env.TETHER_TEST_PLUGIN_DIR ?? path.join(repoRoot, 'target/debug'), `lib${stem}.so`);
}

/** Run a GC and let the deferred Node-API finalizers run (they run from setImmediate). */
export async function collect(rounds = 3) {
  assert.equal(typeof global.gc, 'function', 'run node with --expose-gc');
  for (let i = 0; i < rounds; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Collect until `testing.live_objects()` is back to `baseline`, for a bounded number of
 * rounds (finalizers may need more than one GC cycle); then assert it is.
 */
export async function expectLiveBackTo(baseline, message = 'live objects back to baseline') {
  for (let i = 0; i < 50 && testing.live_objects() !== baseline; i++) await collect(1);
  assert.equal(testing.live_objects(), baseline, message);
}

/** Settle the heap, then read the live-object count. */
export async function settledBaseline() {
  await collect(4);
  return testing.live_objects();
}
