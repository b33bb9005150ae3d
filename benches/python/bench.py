"""Python workloads for `cargo xtask bench`: tether_ffi against pyo3, nanobind, pybind11, tvm-ffi.

usage: python bench.py --peers DIR --out FILE|- [--quick]
       python bench.py --peers DIR --timed-child OUT   (one process's timed rows, as JSON)
       python bench.py --peers DIR --w5 PEER      (one W5 measurement, run in a fresh process)
       python bench.py --peers DIR --count PEER WORKLOAD LOW HIGH   (two loops, for callgrind)
       python bench.py --peers DIR --loop PEER WORKLOAD SECONDS      (one peer's loop, for perf)

Timing is timeit's: a statement compiled into a `for` loop, the loop's time divided by its
count; repeats are interleaved across the peers (round r runs repeat r of every peer), and the
median is reported. The full run times every row in TIMED_PROCESSES fresh interpreters, one
after the other, and reports the median of their medians: a process's own layout moves a
row for every peer alike, by up to a third (`x.real` alone read 18.6-32.9 ns from one process
to the next on one host), as a JVM fork's does (JMH forks; the JVM harness runs five). Every
loop also checks its result, so a wrong answer fails loudly.
"""

import argparse
import gc
import itertools
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
W5_OBJECTS = 1_000_000
W5_OBJECTS_QUICK = 20_000
THREADS = 8
TIMED_PROCESSES = 3
# W8: W1 and W2 over random members of this many live objects (2^10 and 2^20); the quick run
# keeps the labels but makes 2^14 for the large size.
SCALE_SIZES = {"1k": 1 << 10, "1M": 1 << 20}
SCALE_QUICK_LARGE = 1 << 14

# Statements per workload; names come from the peer's namespace (see peers.py).
STATEMENTS = {
    "W1": "echo(x)",
    "W2": "pair.{first_attr}",
    "W3": "add3(1, 2, 3)",
    "W4": "Pair(x, x)",
    "W7": "call(cb)",
}


def same_object(ns, r):
    """`r` is the peer's `x`: the same wrapper, or (tvm-ffi, which has no identity) a new
    wrapper of the same native object."""
    return r is ns["x"] or (hasattr(r, "same_as") and r.same_as(ns["x"]))


# What each statement must give, checked once before timing.
CHECKS = {
    "W1": same_object,
    "W2": same_object,
    "W3": lambda ns, r: r == 6,
    "W4": lambda ns, r: r is not None,
    "W7": same_object,
}


def load_peers(peers_dir, only=None):
    sys.path.insert(0, peers_dir)
    sys.path.insert(0, HERE)
    import peers

    loaded, skipped = {}, []
    for name, loader in peers.LOADERS.items():
        if only and name != only:
            continue
        try:
            loaded[name] = loader(peers_dir)
        except Exception as e:  # noqa: BLE001 - report and skip the peer
            skipped.append((name, str(e).splitlines()[0] if str(e) else type(e).__name__))
    return loaded, skipped


def timer_for(workload, ns):
    stmt = STATEMENTS[workload].format(first_attr=ns.get("first_attr", "first"))
    value = eval(stmt, {}, dict(ns))  # noqa: S307 - our own fixed statements
    if not CHECKS[workload](ns, value):
        raise AssertionError(f"{workload}: `{stmt}` gave {value!r}")
    return timeit.Timer(stmt, globals=dict(ns))


def calibrate(timer, target_s):
    n = 1
    while True:
        dt = timer.timeit(n)
        if dt >= target_s / 4 or n >= 1 << 26:
            return max(1, int(n * target_s / max(dt, 1e-9)))
        n *= 2


def per_op_over_threads(total, body):
    """Run `body(rounds)` on THREADS threads at once (total/THREADS rounds each); the time per
    round over the whole span, from the first thread's start to the last one's end."""
    per = max(1, total // THREADS)
    start = threading.Barrier(THREADS)
    spans = [None] * THREADS

    def worker(i):
        start.wait()
        t0 = time.perf_counter_ns()
        body(per)
        spans[i] = (t0, time.perf_counter_ns())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    span = max(e for _, e in spans) - min(s for s, _ in spans)
    return span / (per * THREADS)


def threaded_echo(ns, total):
    """W6: THREADS threads each run total/THREADS echoes; per-op time over the whole span."""
    echo, x = ns["echo"], ns["x"]

    def body(rounds):
        for _ in range(rounds):
            echo(x)

    return per_op_over_threads(total, body)


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def run_timed(peers_, quick):
    target = 0.002 if quick else 0.04
    repeats = 3 if quick else 15
    records = []
    for workload in STATEMENTS:
        runs = []
        for name, ns in peers_.items():
            try:
                timer = timer_for(workload, ns)
            except Exception as e:  # noqa: BLE001 - report and skip this peer's workload
                print(f"python {workload:<3} {name:<8} skipped: {type(e).__name__}: {e}")
                continue
            timer.timeit(max(1, calibrate(timer, target / 4)))  # warm-up
            runs.append((name, timer, calibrate(timer, target), []))
        for _ in range(repeats):
            for name, timer, n, samples in runs:
                samples.append(timer.timeit(n) / n * 1e9)
        for name, _, n, samples in runs:
            records.append(record(workload, name, median(samples), n, samples))
    # W6: W1 with 8 threads (the GIL serialises them; this measures the switching cost too).
    records += interleaved_threaded("W6", peers_, 20_000 if quick else 400_000, threaded_echo, quick)
    records += run_scale(peers_, quick, target, repeats)
    # W9: threaded churn, THREADS threads each constructing, fetching, dropping and refetching.
    records += interleaved_threaded("W9", peers_, 8_000 if quick else 200_000, threaded_churn, quick)
    return records


def interleaved_threaded(workload, peers_, total, sample, quick):
    """Records of a threaded workload: `sample(ns, total)` per peer, the peers taken in turn in
    each round (as the timed rows' repeats), so a busy spell of the host falls on every peer
    alike; the median of each peer's rounds. A peer whose sample raises is reported and
    dropped."""
    samples = {name: [] for name in peers_}
    for _ in range(3 if quick else 7):
        for name in list(samples):
            try:
                samples[name].append(sample(peers_[name], total))
            except Exception as e:  # noqa: BLE001 - report and skip this peer's workload
                print(f"python {workload:<3} {name:<8} skipped: {type(e).__name__}: {str(e).splitlines()[0]}")
                del samples[name]
    return [record(workload, name, median(s), total, s) for name, s in samples.items()]


def threaded_churn(ns, total):
    """W9: THREADS threads each run total/THREADS rounds of: construct `o = Pair(x, x)`, store
    it in `h = Pair(o, None)`, fetch `echo(o)`, drop `o`, refetch `h.first` twice. Every fetch
    must be the canonical wrapper (checked: a duplicate fails the run; tvm-ffi, which has no
    identity, is checked with `same_as`). Per round over the whole span, as W6."""
    Pair, echo, x = ns["Pair"], ns["echo"], ns["x"]
    first = ns.get("first_attr", "first")
    failures = []

    def same(a, b):
        return a is b or (hasattr(a, "same_as") and a.same_as(b))

    def body(rounds):
        try:
            for _ in range(rounds):
                o = Pair(x, x)
                h = Pair(o, None)
                if not same(echo(o), o):
                    failures.append("echo(o) is not o")
                del o
                if not same(getattr(h, first), getattr(h, first)):
                    failures.append("two fetches of one object gave two wrappers")
        except Exception as e:  # noqa: BLE001 - e.g. a peer whose pair cannot hold a pair
            failures.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")

    value = per_op_over_threads(total, body)
    if failures:
        raise AssertionError(f"W9: {failures[0]} ({len(failures)} times)")
    return value


def run_scale(peers_, quick, target, repeats):
    """W8: `echo(o)` and `o.first` where `o` is the next of N live objects in a shuffled cycle
    (every call touches an object the last N - 1 calls did not: at 2^20 that is a cache miss per
    object). Each call includes the same `next()` of an itertools.cycle, for every peer."""
    records = []
    for label, size in SCALE_SIZES.items():
        if quick and size > SCALE_QUICK_LARGE:
            size = SCALE_QUICK_LARGE
        runs = []
        for name, ns in peers_.items():
            x = ns["x"]
            objs = [ns["Pair"](x, x) for _ in range(size)]
            random.Random(7).shuffle(objs)
            nxt = itertools.cycle(objs).__next__
            scope = dict(ns, nxt=nxt)
            first = ns.get("first_attr", "first")
            for kind, stmt in (("echo", "echo(nxt())"), ("field", f"nxt().{first}")):
                o = nxt()
                got = ns["echo"](o) if kind == "echo" else getattr(o, first)
                want = o if kind == "echo" else x
                if not (got is want or (hasattr(got, "same_as") and got.same_as(want))):
                    raise AssertionError(f"W8 {kind} {name}: `{stmt}` gave {got!r}")
                timer = timeit.Timer(stmt, globals=scope)
                timer.timeit(max(1, calibrate(timer, target / 4)))
                runs.append((f"W8 {kind} {label}", name, timer, calibrate(timer, target), [], objs))
        for _ in range(repeats):
            for _w, _name, timer, n, samples, _objs in runs:
                samples.append(timer.timeit(n) / n * 1e9)
        for workload, name, _, n, samples, _objs in runs:
            records.append(record(workload, name, median(samples), n, samples))
        del runs
        gc.collect()
    return records


def record(workload, peer, value, n, samples, unit="ns/op"):
    print(f"python {workload:<3} {peer:<8} {value:9.2f} {unit}  (n={n}, {len(samples)} repeats)")
    return dict(lang="python", workload=workload, peer=peer, value=value, unit=unit, n=n,
                repeats=len(samples), min=min(samples), max=max(samples))


# Instruction counts (`valgrind --tool=callgrind`, which counts what the CPU is asked to run,
# the same on every CPU model): one process per peer and workload runs the workload's timeit
# loop at two iteration counts, each between two marker calls (`os.getppid`, at which callgrind
# dumps its counts); (Ir(high) - Ir(low)) / (high - low) is the cost of one iteration, timeit's
# loop step included for every peer alike.
COUNTED = ["W1", "W2", "W3", "W4", "W7"]
COUNTED_QUICK = ["W1"]
COUNT_WARMUP = 20_000
COUNT_LOW, COUNT_HIGH = 20_000, 120_000
COUNT_LOW_QUICK, COUNT_HIGH_QUICK = 2_000, 12_000
MARKER = "getppid"


def load_one(peers_dir, peer):
    """The namespace of `peer` alone (for the one-peer child modes), or exit saying why not."""
    loaded, skipped = load_peers(peers_dir, only=peer)
    if peer not in loaded:
        raise SystemExit(f"{peer} not loaded: {skipped[0][1] if skipped else '?'}")
    return loaded[peer]


def count_child(peers_dir, peer, workload, low, high):
    """Run `workload`'s statement low, then high times, each between two markers."""
    timer = timer_for(workload, load_one(peers_dir, peer))
    timer.timeit(COUNT_WARMUP)
    os.getppid()
    timer.timeit(low)
    os.getppid()
    timer.timeit(high)
    os.getppid()


def loop_child(peers_dir, peer, workload, seconds):
    """Run one peer's `workload` loop (W1-W4, W7) for `seconds`, repeats of ~40 ms, and print
    the median and the fastest: one process to put under `perf record`, or to alternate with
    another build's by hand."""
    timer = timer_for(workload, load_one(peers_dir, peer))
    n = calibrate(timer, 0.04)
    samples = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or not samples:
        samples.append(timer.timeit(n) / n * 1e9)
    print(f"python {workload} {peer}: median {median(samples):.2f} ns/op, fastest {min(samples):.2f} "
          f"({len(samples)} repeats of {n})")


def instructions_per_iteration(peers_dir, peer, workload, low, high):
    """Instructions per iteration of `workload`'s loop for `peer` (None if the run failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--dump-before={MARKER}", f"--callgrind-out-file={out}",
             sys.executable, os.path.abspath(__file__), "--peers", peers_dir,
             "--count", peer, workload, str(low), str(high)],
            capture_output=True, text=True, check=False)
        totals = []
        # Part 1 is the start-up, parts 2 and 3 the two loops, the last file the exit.
        for part in (2, 3):
            try:
                with open(f"{out}.{part}") as f:
                    totals += [int(m.group(1)) for m in re.finditer(r"^totals: (\d+)", f.read(), re.M)]
            except OSError:
                pass
    if run.returncode != 0 or len(totals) != 2:
        print(f"python {workload} instr {peer:<8} failed: {run.stderr.strip()[-300:]}")
        return None
    return (totals[1] - totals[0]) / (high - low)


def run_counts(peers_dir, names, quick):
    """`<workload> instr` records: instructions per iteration of each workload's loop."""
    if shutil.which("valgrind") is None:
        print("python instruction counts skipped: valgrind is not installed")
        return []
    low, high = (COUNT_LOW_QUICK, COUNT_HIGH_QUICK) if quick else (COUNT_LOW, COUNT_HIGH)
    records = []
    for workload in COUNTED_QUICK if quick else COUNTED:
        for name in names:
            value = instructions_per_iteration(peers_dir, name, workload, low, high)
            if value is not None:
                records.append(record(f"{workload} instr", name, value, high - low, [value], unit="instr/op"))
    return records


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def w5_child(peers_dir, peer, count):
    """Bytes per live object: RSS growth while `count` fresh objects are alive, divided by count.

    The list that holds them is allocated before the baseline, so only the objects (native
    allocation + Python wrapper + allocator overhead) are counted.
    """
    loaded, skipped = load_peers(peers_dir, only=peer)
    if peer not in loaded:
        print(json.dumps({"error": skipped[0][1] if skipped else "not loaded"}))
        return
    new_obj = loaded[peer]["new_obj"]
    for _ in range(1000):  # warm caches and type objects
        new_obj()
    keep = [None] * count
    gc.collect()
    gc.disable()
    before = rss_bytes()
    for i in range(count):
        keep[i] = new_obj()
    after = rss_bytes()
    print(json.dumps({"bytes_per_object": (after - before) / count, "objects": count}))


def run_w5(peers_dir, names, quick):
    records = []
    count = W5_OBJECTS_QUICK if quick else W5_OBJECTS
    for name in names:
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--peers", peers_dir, "--w5", name,
             "--w5-count", str(count)],
            capture_output=True, text=True, check=False)
        try:
            result = json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            print(f"python W5  {name:<8} failed: {out.stderr.strip()[-300:]}")
            continue
        if "error" in result:
            print(f"python W5  {name:<8} failed: {result['error']}")
            continue
        records.append(record("W5", name, result["bytes_per_object"], count, [result["bytes_per_object"]],
                              unit="bytes/object"))
    return records


def run_timed_in_processes(peers_dir):
    """The timed rows of TIMED_PROCESSES fresh interpreters (each `--timed-child`), one after
    the other: per row, the median of the processes' medians."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(TIMED_PROCESSES):
            out = os.path.join(tmp, f"timed-{i}.json")
            print(f"python timed rows: process {i + 1}/{TIMED_PROCESSES}", flush=True)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--peers", peers_dir, "--timed-child", out],
                           check=True)
            with open(out) as f:
                runs.append(json.load(f))
    records = []
    for first in runs[0]:
        key = (first["workload"], first["peer"])
        same = [r for run in runs for r in run if (r["workload"], r["peer"]) == key]
        value = median([r["value"] for r in same])
        each = ", ".join(f"{r['value']:.2f}" for r in same)
        print(f"python {key[0]:<3} {key[1]:<8} {value:9.2f} {first['unit']}  (the median of {len(same)} processes: {each})")
        records.append(dict(first, value=value, repeats=sum(r["repeats"] for r in same),
                            min=min(r["min"] for r in same), max=max(r["max"] for r in same)))
    return records


def versions():
    from importlib import metadata

    v = {"python": platform.python_version()}
    for dist in ("nanobind", "pybind11", "apache-tvm-ffi", "tether-ffi"):
        try:
            v[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peers", required=True)
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--w5")
    ap.add_argument("--w5-count", type=int, default=W5_OBJECTS)
    ap.add_argument("--count", nargs=4, metavar=("PEER", "WORKLOAD", "LOW", "HIGH"))
    ap.add_argument("--loop", nargs=3, metavar=("PEER", "WORKLOAD", "SECONDS"))
    ap.add_argument("--timed-child")
    a = ap.parse_args()
    peers_dir = os.path.abspath(a.peers)
    if a.timed_child:
        loaded, _ = load_peers(peers_dir)
        with open(a.timed_child, "w") as f:
            json.dump(run_timed(loaded, False), f)
        return
    if a.loop:
        loop_child(peers_dir, a.loop[0], a.loop[1], float(a.loop[2]))
        return
    if a.count:
        count_child(peers_dir, a.count[0], a.count[1], int(a.count[2]), int(a.count[3]))
        return
    if a.w5:
        w5_child(peers_dir, a.w5, a.w5_count)
        return
    loaded, skipped = load_peers(peers_dir)
    for name, why in skipped:
        print(f"python skipped: {name}: {why}")
    records = run_timed(loaded, a.quick) if a.quick else run_timed_in_processes(peers_dir)
    records += run_w5(peers_dir, list(loaded), a.quick)
    records += run_counts(peers_dir, list(loaded), a.quick)
    result = {"records": records, "versions": versions(), "skipped": skipped}
    if a.out == "-":  # standard output (a by-hand run), not a file named "-"
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
