// tether scene example, Node side.
//
// Loads the scene plugin (path in $TETHER_SCENE_PLUGIN), builds a small scene graph and shows
// that every native node has exactly one JS wrapper: find() returns the very object you created,
// a Map keyed by node finds its entries again, and off() finds a listener by the identity of the
// function. Exits with status 1 if any identity fact fails.

import path from 'node:path';
import { loadModule, TetherError } from 'tether-ffi';

const failures = [];

/** Print one checked fact; remember it if it does not hold. */
function fact(label, holds) {
  console.log(`  ${holds ? 'ok  ' : 'FAIL'} ${label}`);
  if (!holds) failures.push(label);
}

/** A coordinate the way the plugin's dump() prints it (Rust's `{}` for f64). */
const fmt = (v) => String(v);

const pluginPath = process.env.TETHER_SCENE_PLUGIN;
if (!pluginPath) {
  console.error('set TETHER_SCENE_PLUGIN to the path of libscene.so (cargo build -p scene)');
  process.exit(2);
}
const { Scene, Node, Transform } = loadModule(pluginPath);
console.log('tether scene example (node)');
console.log(`plugin: ${path.basename(pluginPath)}`);

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
console.log(`  ${Scene.prototype.find.signature}`);
fact('scene.find.length === 1 (one required parameter)', scene.find.length === 1);
fact("scene.add's signature names parent and child", /^add\(parent: Node, child: Node\)/.test(scene.add.signature));

// Per-language data keyed by node: a Map compares keys by identity, so it needs one wrapper.
const labels = new Map([
  [world, 'the root'],
  [house, 'a house'],
  [door, 'the front door'],
  [tree, 'an oak'],
]);
const found = labels.get(scene.find('door'));
console.log(`per-node data (Map): labels.get(scene.find("door")) = '${found}'`);
fact('Map lookup through find() finds the entry', found === 'the front door');

// Listeners: off() finds the listener by the identity of the function.
const heard = [];
const onAdded = (event, node) => {
  heard.push([event, node]);
};
scene.on('added', onAdded);
const window = new Node('window');
window.transform = new Transform(5, 1.5, -2);
scene.add(house, window);
console.log(`listener: heard ${heard.length} event(s): ${heard.map(([e, n]) => `${e} ${n.name}`).join(', ')}`);
fact("the listener's payload is the window wrapper", heard.length === 1 && heard[0][1] === window);
fact('scene.off("added", (e, n) => {}) === false (a different function)', scene.off('added', (e, n) => {}) === false);
fact('scene.off("added", onAdded) === true (found by identity)', scene.off('added', onAdded) === true);
const lamp = new Node('lamp');
lamp.transform = new Transform(-1, 2.5, 0);
scene.add(world, lamp);
fact('a removed listener is not called again', heard.length === 1);

// visit(cb) calls back into JS with the canonical wrappers.
const lines = [];
const labelled = [];
const count = scene.visit((node, depth) => {
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
const expectError = (label, what, run) => {
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
