// tether scene example, Node side.
//
// Uses the typed bindings of the scene plugin (the `scene` package tether-bindgen generates,
// which loads the plugin beside it), builds a small scene graph and shows that every native node
// has exactly one JS wrapper: find() returns the very object you created, a Map keyed by node
// finds its entries again, and off() finds a listener by the identity of the function. Exits
// with status 1 if any identity fact fails. Checked by `tsc --strict`.

import path from 'node:path';
import { TetherError } from 'tether-ffi';
import { Scene, Node, Transform, plugin } from 'scene';

const failures: string[] = [];

/** Print one checked fact; remember it if it does not hold. */
function fact(label: string, holds: boolean): void {
  console.log(`  ${holds ? 'ok  ' : 'FAIL'} ${label}`);
  if (!holds) failures.push(label);
}

/** A coordinate the way the plugin's dump() prints it (Rust's `{}` for f64). */
const fmt = (v: number): string => String(v);

/** The registry's declaration a native method carries at run time (`fn.signature`). */
const signatureOf = (f: object): string => (f as { signature?: string }).signature ?? '';

console.log('tether scene example (node)');
console.log(`plugin: ${path.basename(plugin.path)}`);

// Build the scene: world -> house -> door, world -> tree, with positions.
const scene = new Scene('world');
const world = scene.root;
const house = new Node('house');
const door = new Node('door');
const tree = new Node('tree');
scene.add(world, house);
scene.add(house, door);
scene.add(world, tree);
house.transform = new Transform(4, 0, -2);
door.transform = new Transform(4.5, 0, -1.5);
tree.transform = new Transform(-3, 0, 6);

console.log('identity:');
fact('scene.find("door") === scene.find("door")', scene.find('door') === scene.find('door'));
fact('scene.find("door") === door (the wrapper we created)', scene.find('door') === door);
fact('scene.root === scene.find("world")', scene.root === scene.find('world'));
fact('door.parent === house', door.parent === house);
fact('house.children.get(0) === door', house.children.get(0) === door);
fact('door.transform === door.transform', door.transform === door.transform);

// Signatures come from the plugin's Rust source: names, types, docs.
console.log('signatures:');
console.log(`  ${signatureOf(Scene.prototype.find)}`);
fact('scene.find.length === 1 (one required parameter)', scene.find.length === 1);
fact("scene.add's signature names parent and child", /^add\(parent: Node, child: Node\)/.test(signatureOf(scene.add)));

// Per-language data keyed by node: a Map compares keys by identity, so it needs one wrapper.
const labels = new Map<Node, string>([
  [world, 'the root'],
  [house, 'a house'],
  [door, 'the front door'],
  [tree, 'an oak'],
]);
const found = labels.get(scene.find('door'));
console.log(`per-node data (Map): labels.get(scene.find("door")) = '${found}'`);
fact('Map lookup through find() finds the entry', found === 'the front door');

// Listeners: off() finds the listener by the identity of the function.
const heard: [string, Node][] = [];
const onAdded = (event: string, node: Node): void => {
  heard.push([event, node]);
};
scene.on('added', onAdded);
const window = new Node('window');
window.transform = new Transform(5, 1.5, -2);
scene.add(house, window);
console.log(`listener: heard ${heard.length} event(s): ${heard.map(([e, n]) => `${e} ${n.name}`).join(', ')}`);
fact("the listener's payload is the window wrapper", heard.length === 1 && heard[0][1] === window);
fact('scene.off("added", (e, n) => {}) === false (a different function)', scene.off('added', (_e: string, _n: Node) => {}) === false);
fact('scene.off("added", onAdded) === true (found by identity)', scene.off('added', onAdded) === true);
const lamp = new Node('lamp');
lamp.transform = new Transform(-1, 2.5, 0);
scene.add(world, lamp);
fact('a removed listener is not called again', heard.length === 1);

// visit(cb) calls back into JS with the canonical wrappers.
const lines: string[] = [];
const labelled: Node[] = [];
const count = scene.visit((node: Node, depth: number | bigint) => {
  const t = node.transform;
  lines.push(`${'  '.repeat(Number(depth))}${node.name} (${fmt(t.x)}, ${fmt(t.y)}, ${fmt(t.z)})`);
  if (labels.has(node)) labelled.push(node);
});
console.log(`visit: ${count} nodes, ${labelled.length} found in the Map`);
const expected = [world, house, door, tree];
fact(
  'visit passed the wrappers keyed in the Map',
  labelled.length === expected.length && labelled.every((n, i) => n === expected[i]),
);

console.log('errors:');
const expectError = (label: string, what: string, run: () => void): void => {
  try {
    run();
    fact(`${label} throws a ${what}`, false);
  } catch (e) {
    if (!(e instanceof TetherError) || e.kind !== what) throw e;
    console.log(`  ${label} -> ${e.kind}: ${e.message}`);
  }
};
expectError('scene.add(door, world)', 'ValueError', () => scene.add(door, world));
expectError('scene.find("attic")', 'KeyError', () => scene.find('attic'));

const dump = scene.dump();
console.log('--- tree ---');
process.stdout.write(dump);
console.log('--- end tree ---');
const dumpLines = dump.split('\n').filter((l) => l !== '');
fact(
  'the tree computed in JS from visit() equals scene.dump()',
  lines.length === dumpLines.length && lines.every((l, i) => l === dumpLines[i]),
);

if (failures.length > 0) {
  console.log(`FAILED: ${failures.length} fact(s) did not hold`);
  process.exit(1);
}
console.log('all facts hold');
