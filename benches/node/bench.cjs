// Node workloads for `cargo xtask bench`: tether-ffi against napi-rs and raw Node-API.
// usage: node --expose-gc bench.cjs --out FILE|- --peers DIR --tether DIR [--quick] [--only W4]
// (--only: workloads by hand, e.g. W3 or W1,W3; W5, W8, W9 and the instruction counts run only
// without it)
// Each (peer, workload) gets its own loop function (new Function), so every call site sees one
// callee and stays monomorphic, as in hand-written code. Loops are warmed, then timed with
// process.hrtime.bigint; rounds interleave the peers so drift hits all of them alike.
'use strict';
const fs = require('fs');
const path = require('path');

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const only = opt('--only')?.split(',');
const out = opt('--out');
const peersDir = path.resolve(opt('--peers'));
const tetherDir = path.resolve(opt('--tether'));
// W5: bytes per live two-field object (native + wrapper), measured in a fresh process per peer.
const W5_OBJECTS = quick ? 20_000 : 1_000_000;

const TARGET_NS = quick ? 2e6 : 40e6; // one repeat
const REPEATS = quick ? 3 : 15;
const WARMUP_NS = quick ? 20e6 : 500e6;

/** The loop bodies; `f` is the peer's function or class, `x` an object, `p` a pair. */
const BODIES = {
  W1: 'if (f(x) !== x) throw new Error("echo(x) is not x");',
  W2: 'if (p.first !== x) throw new Error("p.first is not the stored object");',
  W3: 'acc += f(i, 2, 3);',
  W4: 'last = new f(x, x);',
  W7: 'if (f(cb) !== x) throw new Error("call(cb) did not return cb()");',
};

// W8: W1 and W2 over random members of N live objects (2^10 and 2^20; the quick run makes
// 2^14 for the large size): `objs[order[i & mask]]`, the same index work for every peer.
const SCALE_SIZES = { '1k': 1 << 10, '1M': quick ? 1 << 14 : 1 << 20 };
const SCALE_BODIES = {
  echo: 'const o = objs[order[i & mask]]; if (f(o) !== o) throw new Error("echo(o) is not o");',
  field: 'if (objs[order[i & mask]].first !== x) throw new Error("o.first is not the stored object");',
};

// Workloads that leave garbage behind (W4's objects and their finalizers) start each timed
// repeat after a full collection (untimed): the collections a repeat runs into are then
// caused by its own peer's objects, instead of a repeat (the rounds interleave) paying for
// the previous peer's garbage whenever V8 happens to collect.
const COLLECTS = new Set(['W4']);
// Workloads whose cost per op depends on how many ops a repeat holds (construction: the
// garbage collections a repeat pays for grow with it) run the same count for every peer
// instead of a count calibrated to a time: calibrated counts differed up to 7x between peers
// (raw Node-API 8,010 objects per repeat against tether's 53,590 in one run), which moved a
// peer's figure 3x between runs.
const FIXED_COUNTS = { W4: quick ? 2_000 : 100_000 };

function makeLoop(body, peer) {
  // A fresh function per (peer, workload): its own type feedback. The peer's name goes into
  // the source: V8 caches compiled code by source text, and closures made from one cached
  // source share their feedback, so identical loops for three peers would see three callees.
  return new Function('f', 'x', 'p', 'cb', 'objs', 'order', `// ${peer}
    const mask = objs ? objs.length - 1 : 0;
    return function loop(n) {
      let acc = 0, last = null;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) { ${body} }
      const dt = Number(process.hrtime.bigint() - t0);
      if (acc === -1 || last === 0) throw new Error('unreachable');
      return dt;
    };`);
}

/** Peers: name -> { W1..W7: [f, x, p, cb] } for the workloads it can express (`only`: one). */
function loadPeers(only) {
  const peers = {};
  const skipped = [];
  const add = (name, load) => {
    if (only && name !== only) return;
    try {
      peers[name] = load();
    } catch (e) {
      skipped.push([name, e.message.split('\n')[0]]);
    }
  };
  add('napi_raw', () => {
    const raw = require(path.join(peersDir, 'peer_napi_raw.node'));
    const x = {};
    // No native object type: its W8 objects are plain JS objects (echo passes them through).
    return {
      W1: [raw.echo, x],
      W3: [raw.add3],
      W4: [raw.Pair, x],
      W7: [raw.call, x, null, () => x],
      make: () => ({ first: x }),
    };
  });
  add('napi', () => {
    const napi = require(path.join(peersDir, 'peer_napi.node'));
    const x = new napi.Pair(null, null);
    return {
      W1: [napi.echo, x],
      W2: [null, x, new napi.Pair(x, null)],
      W3: [napi.add3],
      W4: [napi.Pair, x],
      W7: [napi.call, x, null, () => x],
      make: () => new napi.Pair(x, null),
      fresh: () => new napi.Pair(null, null),
    };
  });
  add('tether', loadTether);
  return { peers, skipped };
}

/** tether's side, through the public API of the tether-ffi package (crates/node). */
function loadTether() {
  let testing;
  try {
    testing = require('./tether_api.cjs').testing(require(tetherDir));
  } catch (e) {
    throw new Error(`tether node frontend not built or not loadable (${e.message.split('\n')[0]})`);
  }
  const x = testing.make_pair(null, null);
  return {
    W1: [testing.echo, x],
    W2: [null, x, testing.make_pair(x, null)],
    W3: [testing.add3],
    W4: [testing.Pair, x],
    W7: [testing.call, x, null, () => x],
    make: () => testing.make_pair(x, null),
    fresh: () => new testing.Pair(null, null),
  };
}

/** W8's jobs: for each size and peer, its objects in a random order, echo and (where the peer
 * has a native field) field reads. */
function scaleJobs(peers) {
  const jobs = [];
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  for (const [label, size] of Object.entries(SCALE_SIZES)) {
    for (const [name, peer] of Object.entries(peers)) {
      if (!peer.make) continue;
      const objs = Array.from({ length: size }, peer.make);
      const order = new Uint32Array(size).map((_, i) => i);
      for (let i = size - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
      const x = objs[0].first;
      jobs.push({ w: `W8 echo ${label}`, name, args: [peer.W1[0], x, null, null, objs, order], body: SCALE_BODIES.echo });
      if (peer.W2) jobs.push({ w: `W8 field ${label}`, name, args: [null, x, null, null, objs, order], body: SCALE_BODIES.field });
    }
  }
  return jobs;
}

/** W5 in this (child) process: RSS growth while `count` fresh objects are alive, after a GC,
 * divided by count. The array holding them exists before the baseline. */
function w5Child(peerName, count) {
  const { peers } = loadPeers();
  const make = peers[peerName]?.fresh;
  if (!make) {
    console.log(JSON.stringify({ error: `${peerName} has no two-field object` }));
    return;
  }
  for (let i = 0; i < 1000; i++) make();
  const keep = new Array(count).fill(null);
  global.gc();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < count; i++) keep[i] = make();
  global.gc();
  const after = process.memoryUsage().rss;
  console.log(JSON.stringify({ bytes_per_object: (after - before) / count, objects: count, kept: keep.length }));
}

function runW5(names) {
  const { spawnSync } = require('child_process');
  const records = [];
  for (const name of names) {
    const child = spawnSync(process.execPath, ['--expose-gc', __filename, '--peers', peersDir, '--tether', tetherDir,
      '--w5', name, '--w5-count', String(W5_OBJECTS)], { encoding: 'utf8' });
    let result;
    try {
      result = JSON.parse(child.stdout.trim().split('\n').pop());
    } catch {
      console.log(`node W5  ${name.padEnd(8)} failed: ${child.stderr.slice(-300)}`);
      continue;
    }
    if (result.error) continue;
    const value = result.bytes_per_object;
    console.log(`node W5  ${name.padEnd(8)} ${value.toFixed(2).padStart(9)} bytes/object  (n=${W5_OBJECTS})`);
    records.push({ lang: 'node', workload: 'W5', peer: name, value, unit: 'bytes/object', n: W5_OBJECTS,
      repeats: 1, min: value, max: value });
  }
  return records;
}

// W9: threaded churn in WORKERS worker_threads, each running rounds of: construct
// `o = new Pair(x, x)`, store it in `h = new Pair(o, null)`, fetch `echo(o)`, refetch `h.first`
// twice; every fetch must be the canonical wrapper (a duplicate fails the run). Per round over
// the whole span (the workers start together on a shared counter), as the JVM's and Python's.
const WORKERS = 4;
const W9_ROUNDS = quick ? 8_000 : 200_000;

function churnWorker({ peer, rounds, ready }) {
  const { parentPort } = require('worker_threads');
  const { peers } = loadPeers(peer);
  const [Pair, x] = peers[peer].W4;
  const echo = peers[peer].W1[0];
  const counter = new Int32Array(ready);
  Atomics.add(counter, 0, 1);
  while (Atomics.load(counter, 0) < WORKERS) Atomics.wait(counter, 0, Atomics.load(counter, 0), 1);
  let failures = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) {
    const o = new Pair(x, x);
    const h = new Pair(o, null);
    if (echo(o) !== o) failures++;
    if (h.first !== h.first) failures++;
  }
  const t1 = process.hrtime.bigint();
  parentPort.postMessage({ t0, t1, failures });
}

async function churnOnce(peer) {
  const { Worker } = require('worker_threads');
  const ready = new SharedArrayBuffer(4);
  const rounds = Math.max(1, Math.floor(W9_ROUNDS / WORKERS));
  const results = await Promise.all(Array.from({ length: WORKERS }, () => new Promise((resolve, reject) => {
    const w = new Worker(__filename, {
      argv: ['--peers', peersDir, '--tether', tetherDir, '--out', '-'],
      workerData: { peer, rounds, ready },
    });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  const failures = results.reduce((n, r) => n + r.failures, 0);
  if (failures) throw new Error(`W9 ${peer}: ${failures} fetches were not the canonical wrapper`);
  const span = Number(results.reduce((m, r) => (r.t1 > m ? r.t1 : m), 0n) -
    results.reduce((m, r) => (r.t0 < m ? r.t0 : m), results[0].t0));
  return span / (rounds * WORKERS);
}

async function runW9(names) {
  const records = [];
  const repeats = quick ? 3 : 7;
  // The peers in turn in each round, as the timed rows' repeats: a busy spell falls on all.
  const samplesOf = Object.fromEntries(names.map((name) => [name, []]));
  for (let r = 0; r < repeats; r++) {
    for (const name of names) samplesOf[name].push(await churnOnce(name));
  }
  for (const name of names) {
    const samples = samplesOf[name];
    const value = median(samples);
    console.log(`node W9  ${name.padEnd(8)} ${value.toFixed(2).padStart(9)} ns/op  (n=${W9_ROUNDS}, ${repeats} repeats, ${WORKERS} workers)`);
    records.push({ lang: 'node', workload: 'W9', peer: name, value, unit: 'ns/op', n: W9_ROUNDS,
      repeats, min: Math.min(...samples), max: Math.max(...samples) });
  }
  return records;
}

// Instruction counts (`valgrind --tool=callgrind`, which counts what the CPU is asked to run,
// the same on every CPU model): one process per peer and workload warms the workload's loop,
// then runs it at two iteration counts, each between two marker calls (`process.ppid`, whose
// getppid() is where callgrind dumps its counts); (Ir(high) - Ir(low)) / (high - low) is one
// iteration's cost, the loop's own step included for every peer alike. V8 runs single-threaded
// there, so a background compile or marking thread cannot land in one part and not the other.
const COUNTED = quick ? ['W1'] : ['W1', 'W2', 'W3', 'W4', 'W7'];
const COUNT_WARMUP = quick ? 20_000 : 200_000;
const [COUNT_LOW, COUNT_HIGH] = quick ? [2_000, 12_000] : [20_000, 120_000];
const MARKER = 'getppid';

function countChild(peerName, w, low, high) {
  const { peers } = loadPeers(peerName);
  const args = peers[peerName]?.[w];
  if (!args) throw new Error(`${peerName} cannot run ${w}`);
  const loop = makeLoop(BODIES[w], peerName)(...args);
  loop(COUNT_WARMUP);
  void process.ppid;
  loop(low);
  void process.ppid;
  loop(high);
  void process.ppid;
}

function runCounts(peers) {
  const { spawnSync } = require('child_process');
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    console.log('node instruction counts skipped: valgrind is not installed');
    return [];
  }
  const os = require('os');
  const records = [];
  for (const w of COUNTED) {
    for (const name of Object.keys(peers).filter((n) => peers[n][w])) {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tether-count-'));
      const cg = path.join(tmp, 'callgrind.out');
      const child = spawnSync('valgrind', ['--tool=callgrind', `--dump-before=${MARKER}`, `--callgrind-out-file=${cg}`,
        process.execPath, '--single-threaded', __filename, '--peers', peersDir, '--tether', tetherDir,
        '--count', name, w, String(COUNT_LOW), String(COUNT_HIGH)], { encoding: 'utf8' });
      // Part 1 is the start-up and warm-up, parts 2 and 3 the two loops, the last file the exit.
      const totals = [2, 3].map((part) => {
        try {
          return Number(/^totals: (\d+)/m.exec(fs.readFileSync(`${cg}.${part}`, 'utf8'))?.[1]);
        } catch {
          return NaN;
        }
      });
      fs.rmSync(tmp, { recursive: true, force: true });
      if (child.status !== 0 || totals.some(Number.isNaN)) {
        console.log(`node ${w} instr ${name.padEnd(8)} failed: ${(child.stderr ?? '').slice(-300)}`);
        continue;
      }
      const value = (totals[1] - totals[0]) / (COUNT_HIGH - COUNT_LOW);
      console.log(`node ${w} instr ${name.padEnd(8)} ${value.toFixed(2).padStart(9)} instr/op  (n=${COUNT_HIGH - COUNT_LOW})`);
      records.push({ lang: 'node', workload: `${w} instr`, peer: name, value, unit: 'instr/op',
        n: COUNT_HIGH - COUNT_LOW, repeats: 1, min: value, max: value });
    }
  }
  return records;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function main() {
  if (opt('--w5')) {
    w5Child(opt('--w5'), Number(opt('--w5-count')));
    return;
  }
  const count = args.indexOf('--count');
  if (count >= 0) {
    const [peer, w, low, high] = args.slice(count + 1, count + 5);
    countChild(peer, w, Number(low), Number(high));
    return;
  }
  const { peers, skipped } = loadPeers();
  for (const [name, why] of skipped) console.log(`node skipped: ${name}: ${why}`);
  const records = [];
  const byWorkload = new Map();
  for (const w of Object.keys(BODIES)) {
    if (only && !only.includes(w)) continue;
    for (const [name, peer] of Object.entries(peers)) {
      if (peer[w]) byWorkload.set(w, [...(byWorkload.get(w) ?? []), { name, args: peer[w], body: BODIES[w] }]);
    }
  }
  if (!only) for (const job of scaleJobs(peers)) byWorkload.set(job.w, [...(byWorkload.get(job.w) ?? []), job]);
  for (const [w, jobs] of byWorkload) {
    const runs = [];
    for (const { name, args, body } of jobs) {
      const loop = makeLoop(body, name)(...args);
      const end = Date.now() + WARMUP_NS / 1e6;
      let n = 1000;
      while (Date.now() < end) loop(n);
      let dt;
      if (FIXED_COUNTS[w] !== undefined) {
        n = FIXED_COUNTS[w];
      } else {
        while ((dt = loop(n)) < TARGET_NS / 4 && n < 2 ** 28) n *= 2;
        n = Math.max(1, Math.min(2 ** 28, Math.round((n * TARGET_NS) / Math.max(dt, 1))));
      }
      runs.push({ name, loop, n, samples: [] });
    }
    for (let r = 0; r < REPEATS; r++) {
      for (const run of runs) {
        if (COLLECTS.has(w)) global.gc();
        run.samples.push(run.loop(run.n) / run.n);
      }
    }
    for (const run of runs) {
      const value = median(run.samples);
      console.log(`node ${w.padEnd(3)} ${run.name.padEnd(8)} ${value.toFixed(2).padStart(9)} ns/op  (n=${run.n}, ${REPEATS} repeats)`);
      records.push({
        lang: 'node', workload: w, peer: run.name, value, unit: 'ns/op', n: run.n,
        repeats: REPEATS, min: Math.min(...run.samples), max: Math.max(...run.samples),
      });
    }
  }
  if (!only) {
    records.push(...runW5(Object.keys(peers).filter((name) => peers[name].fresh)));
    records.push(...(await runW9(Object.keys(peers).filter((name) => peers[name].W2))));
    records.push(...runCounts(peers));
  }
  const versions = { node: process.version, 'node-api': process.versions.napi };
  const json = JSON.stringify({ records, versions, skipped }, null, 1);
  // `--out -`: standard output (a by-hand run), not a file named `-`.
  if (out === '-') process.stdout.write(`${json}\n`);
  else fs.writeFileSync(out, json);
}

if (require('worker_threads').isMainThread) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  churnWorker(require('worker_threads').workerData);
}
