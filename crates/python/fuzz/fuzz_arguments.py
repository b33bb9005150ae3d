"""Fuzzes the Python frontend's argument conversion and pickle reconstruction (`cargo xtask harden`).

Each input builds random nested values of every Python kind (None, bool, small and huge ints,
odd floats, str with lone surrogates, bytes, bytearray, list/tuple/dict/set/frozenset, cycles,
deep nesting, tether objects, callables, plain objects, subclasses of the built-in kinds and
user objects whose __iter__, items, __len__, __index__ or __hash__ raise or lie) and passes them to testing.echo,
testing.add, testing.sum, testing.make_map, testing.call, testing.stash/take and the Pair and
Triple constructors; it calls `tether_ffi._rebuild` with random keys and field tuples and loads
mutated pickles of tether objects (through an Unpickler that resolves only `_rebuild`).

Checked per input: every exception is a typed one (TYPED below, or the callback's own
exception, or what a user method raised); anything else (SystemError, RecursionError, a RustPanic, ...) is a finding, written
as one line to the findings file; and `testing.live_objects()` is back at its baseline. A crash
ends the process (libFuzzer writes the input to the artifacts folder).

Driven by atheris (coverage-guided, libFuzzer) when it is installed, else by a seeded random
generator (`--engine random`). Usage:
  fuzz_arguments.py --findings FILE [--engine atheris|random] [--seed N] [--runs N | --seconds S] [corpus dir]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import pickle
import pickletools
import re
import random
import sys
import time
import traceback

# Every native error captures a backtrace when RUST_BACKTRACE is set (a thousand times slower
# under libFuzzer); the fuzzer raises errors by the thousand and reads none of them. Set before
# the extension loads (the standard library reads it once).
os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

try:
    import atheris
except ImportError:  # the seeded fallback
    atheris = None

if atheris is not None:
    with atheris.instrument_imports():
        import tether_ffi
else:
    import tether_ffi

testing = tether_ffi.testing

TYPED = (
    TypeError,  # tether_ffi.TypeError and builtins.TypeError
    ValueError,  # incl. UnicodeError and tether_ffi.ValueError
    OverflowError,
    KeyError,
    IndexError,
    AttributeError,
    pickle.UnpicklingError,
    EOFError,  # a truncated pickle
)


class Boom(Exception):
    """What the fuzzed callbacks raise; it must come back out of testing.call as itself."""


class Source:
    """The seeded fallback's stand-in for atheris.FuzzedDataProvider (the calls used here)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def ConsumeIntInRange(self, lo: int, hi: int) -> int:  # noqa: N802 - atheris' names
        return self.rng.randint(lo, hi)

    def ConsumeBytes(self, n: int) -> bytes:  # noqa: N802
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(0, n)))

    def ConsumeUnicode(self, n: int) -> str:  # noqa: N802
        return "".join(chr(self.rng.choice((self.rng.randint(0, 0x7F), self.rng.randint(0, 0x10FFFF))))
                       for _ in range(self.rng.randint(0, n)))

    def ConsumeFloat(self) -> float:  # noqa: N802
        return self.rng.choice((self.rng.uniform(-1e308, 1e308), self.rng.random(), float("nan"), -0.0))

    def ConsumeBool(self) -> bool:  # noqa: N802
        return self.rng.random() < 0.5


ODD_INTS = (0, 1, -1, 2**31, 2**63 - 1, -(2**63), 2**63, 2**64, -(2**63) - 1, 2**200, -(2**200), 10**400)
ODD_FLOATS = (float("nan"), -0.0, float("inf"), float("-inf"), 5e-324, 1.7976931348623157e308)
ODD_STRS = ("", "x", "lone \ud800 surrogate", "\udfff", "\U0001F600" * 9, "nul\x00inside", "testing.Pair")


def pick(src, seq):
    return seq[src.ConsumeIntInRange(0, len(seq) - 1)]


def value(src, depth: int = 0):
    """A random value; containers nest up to a few levels, with cycles and deep chains now and then."""
    kind = src.ConsumeIntInRange(0, 24 if depth < 4 else 11)
    if kind == 0:
        return None
    if kind == 1:
        return src.ConsumeBool()
    if kind == 2:
        return src.ConsumeIntInRange(-(2**70), 2**70)
    if kind == 3:
        return pick(src, ODD_INTS)
    if kind == 4:
        return src.ConsumeFloat()
    if kind == 5:
        return pick(src, ODD_FLOATS)
    if kind == 6:
        return src.ConsumeUnicode(12)
    if kind == 7:
        return pick(src, ODD_STRS)
    if kind == 8:
        return src.ConsumeBytes(16)
    if kind == 9:
        return pick(src, (bytearray(b"ba"), memoryview(b"mv"), 1j, object(), Boom("x"), type, ..., NotImplemented))
    if kind == 10:
        return pick(src, tether_objects())
    if kind == 11:
        return pick(src, (lambda *a: a, lambda *a: (_ for _ in ()).throw(Boom("cb")), len, print))
    n = src.ConsumeIntInRange(0, 4)
    items = [value(src, depth + 1) for _ in range(n)]
    if kind in (12, 13):
        return items
    if kind == 14:
        return tuple(items)
    if kind in (15, 16):
        out = {}
        for item in items:
            try:
                out[item] = value(src, depth + 1)
            except TypeError:  # unhashable key
                out[str(len(out))] = item
        return out
    if kind == 17:
        return set(i for i in items if _hashable(i))
    if kind == 18:
        return frozenset(i for i in items if _hashable(i))
    if kind == 19:  # a list that contains itself, maybe through a dict or a tuple
        items.append(items)
        return pick(src, (items, {"k": items}, (items,), [1, [items]]))
    if kind == 20:  # a deep chain, around the limit
        levels = pick(src, (tether_ffi.MAX_NESTING_DEPTH - 1, tether_ffi.MAX_NESTING_DEPTH,
                            tether_ffi.MAX_NESTING_DEPTH + 1, 5000))
        v = items
        for _ in range(levels):
            v = pick(src, ([v], (v,), {"k": v}))
        return v
    if kind == 21:  # the same container side by side (no cycle)
        return [items, items, (items,)]
    if kind == 22:
        return testing.Pair(*(items + [0, 0])[:2]) if _converts(items[:2]) else items
    if kind == 23:
        return pick(src, (range(n), hostile(src, items)))
    return {frozenset(): 1} if n else {(): ()}


class MyList(list):
    pass


class MyDict(dict):
    pass


class MyInt(int):
    pass


class MyStr(str):
    pass


class MyFloat(float):
    pass


class BadIterList(list):
    def __iter__(self):
        raise Boom("iter")


class BadItemsDict(dict):
    def items(self):
        raise Boom("items")

    def keys(self):
        raise Boom("keys")


class LyingLenList(list):
    def __len__(self):
        return 2**62


class BadIndex:
    def __index__(self):
        raise Boom("index")

    def __int__(self):
        raise Boom("int")

    def __float__(self):
        raise Boom("float")


class BadHash:
    def __hash__(self):
        raise Boom("hash")

    def __eq__(self, other):
        raise Boom("eq")


def hostile(src, items):
    """Subclasses of the built-in kinds, and user objects whose special methods raise or lie."""
    return pick(src, (MyList(items), MyDict(enumerate(items)), MyInt(src.ConsumeIntInRange(-5, 5)),
                      MyInt(2**64), MyStr("sub\ud800"), MyFloat(float("nan")), BadIterList(items),
                      BadItemsDict({"k": items}), LyingLenList(items), BadIndex(), BadHash(), True))


_TETHER: list = []


def tether_objects():
    if not _TETHER:
        _TETHER.extend([testing.Pair(1, 2), testing.Triple(1, "b", [3]), testing.make_array(2),
                        testing.make_map([1, "k"], [None, 2.5]), testing.echo, testing.add])
        moved = testing.Pair(0, 0)
        moved._move()
        _TETHER.append(moved)  # a moved wrapper: using it raises ValueError
    return _TETHER


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _converts(items) -> bool:
    try:
        testing.echo(list(items))
        return True
    except TYPED:
        return False


def call(src):
    """One call with random arguments (a random count now and then: arity errors)."""
    which = src.ConsumeIntInRange(0, 11)
    args = [value(src) for _ in range(src.ConsumeIntInRange(0, 3))]
    if which == 0:
        return testing.echo(*(args[:1] or [None]))
    if which == 1:
        return testing.echo(*args)
    if which == 2:
        return testing.add(*(args + [1, 2])[:2])
    if which == 3:
        return testing.sum(*(args[:1] or [[]]))
    if which == 4:
        return testing.make_map(*(args + [[], []])[:2])
    if which == 5:
        cb = pick(src, (lambda *a: a[0] if a else None, lambda *a: (_ for _ in ()).throw(Boom("cb")),
                        lambda *a: value(src)))
        try:
            return testing.call(cb, *args)
        except Boom:
            return None  # the callback's own exception came back out: as promised (T33)
    if which == 6:
        key = pick(src, ("k", src.ConsumeUnicode(4), value(src)))
        testing.stash(key, *(args[:1] or [None]))
        return testing.take(key)
    if which == 7:
        return testing.Pair(*args)
    if which == 8:
        return testing.Triple(*args)
    if which == 9:
        return tether_ffi._rebuild(pick(src, ("testing.Pair", "testing.Triple", "testing.Aligned",
                                             src.ConsumeUnicode(12), value(src))),
                                   pick(src, (tuple(args), value(src), args)))
    if which == 10:
        return load_mutated_pickle(src)
    return testing.make_array(pick(src, (0, 1, 3, -1, 2**40, 2**64, value(src))))


class OnlyRebuild(pickle.Unpickler):
    """Resolves tether_ffi._rebuild and nothing else (a mutated pickle must not run other code)."""

    def find_class(self, module, name):
        if (module, name) == ("tether_ffi", "_rebuild"):
            return tether_ffi._rebuild
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed here")


#: The most a mutated pickle may declare for one item (bytes, string, frame) or memo index.
MAX_DECLARED = 1 << 20
#: The opcodes whose int argument is a size or a memo index the unpickler allocates for.
SIZED = {"FRAME", "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"}


def declared_too_much(data: bytes) -> bool:
    """Does the pickle declare an item longer than MAX_DECLARED, or a memo index beyond it?
    CPython's unpickler allocates what a length field says before it reads it, and grows (and
    clears) its memo up to any index a PUT names: gigabytes, past libFuzzer's RSS limit (the
    full harden run's OOM was a LONG_BINPUT of index 1,309,290,569: the pickle module's
    behaviour, not tether's). pickletools reads the same opcodes from the bytes there are,
    allocating nothing big."""
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in SIZED and isinstance(arg, int) and arg > MAX_DECLARED:
                return True
            if isinstance(arg, (bytes, bytearray, str)) and len(arg) > MAX_DECLARED:
                return True
    except Exception as e:  # noqa: BLE001 - a truncated or malformed pickle
        declared = re.search(r"expected (\d+) bytes", str(e))
        return declared is not None and int(declared.group(1)) > MAX_DECLARED
    return False


def load_mutated_pickle(src):
    obj = pick(src, (testing.Pair(value(src), 2), testing.Triple(1, 2, 3), testing.Pair([1, "x"], {"k": b"v"})))
    data = bytearray(pickle.dumps(obj, protocol=src.ConsumeIntInRange(0, pickle.HIGHEST_PROTOCOL)))
    for _ in range(src.ConsumeIntInRange(1, 4)):
        at = src.ConsumeIntInRange(0, len(data) - 1)
        op = src.ConsumeIntInRange(0, 2)
        if op == 0:
            data[at] = src.ConsumeIntInRange(0, 255)
        elif op == 1:
            del data[at]
        else:
            data[at:at] = src.ConsumeBytes(4)
    if declared_too_much(bytes(data)):
        raise pickle.UnpicklingError("the mutated pickle declares an item too long to read here")
    try:
        return OnlyRebuild(io.BytesIO(bytes(data))).load()
    except MemoryError as e:
        # A mutated length field makes CPython's unpickler itself ask for gigabytes. That is the
        # pickle module's failure, not tether's, when it happened inside load() and not in a
        # call out of it (`_rebuild` would add its frame).
        if traceback.extract_tb(e.__traceback__)[-1].name == "load_mutated_pickle":
            raise pickle.UnpicklingError(f"the unpickler ran out of memory: {e}") from e
        raise


class Run:
    def __init__(self, findings_path: str):
        self.findings_path = findings_path
        self.executions = 0
        self.findings = 0
        self.baseline = None

    def finding(self, what: str, detail: str) -> None:
        self.findings += 1
        with open(self.findings_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"what": what, "detail": detail[-2000:]}) + "\n")

    def one(self, src) -> None:
        if self.baseline is None:
            tether_objects()
            testing.stash_clear()
            gc.collect()
            self.baseline = testing.live_objects()
        self.executions += 1
        try:
            for _ in range(src.ConsumeIntInRange(1, 3)):
                call(src)
        except TYPED:
            pass
        except Boom:
            pass  # a user method's own exception came back out as itself
        except Exception as e:  # noqa: BLE001 - an untyped failure is what we look for
            self.finding(f"untyped {type(e).__module__}.{type(e).__qualname__}: {str(e)[:200]}",
                         traceback.format_exc())
        testing.stash_clear()
        if testing.live_objects() != self.baseline:
            gc.collect()
            live = testing.live_objects()
            if live != self.baseline:
                self.finding(f"live_objects() {live}, baseline {self.baseline}", "after an input")
                self.baseline = live


if atheris is not None:  # coverage of this file's branches guides the mutations too
    value, call, load_mutated_pickle = (atheris.instrument_func(f) for f in (value, call, load_mutated_pickle))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", required=True)
    ap.add_argument("--engine", choices=("atheris", "random"), default="atheris" if atheris else "random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--seconds", type=int, default=0)
    opts, rest = ap.parse_known_args()
    sys.setrecursionlimit(20_000)
    run = Run(opts.findings)
    print(f"engine: {opts.engine}", flush=True)
    if opts.engine == "atheris":
        if atheris is None:
            print("atheris is not installed", file=sys.stderr)
            return 2
        flags = ["-print_final_stats=1", "-rss_limit_mb=4096", "-timeout=60", f"-seed={opts.seed}"]
        flags += [f"-atheris_runs={opts.runs}"] if opts.runs else [f"-max_total_time={opts.seconds}"]
        def one(data: bytes) -> None:
            run.one(atheris.FuzzedDataProvider(data))
            if run.executions == opts.runs:  # -atheris_runs exits after this input, without stat:: lines
                print(f"stat::number_of_executed_units: {run.executions}", flush=True)

        atheris.Setup([sys.argv[0], *flags, *rest], one)
        atheris.Fuzz()  # exits the process when done (stat:: lines printed by libFuzzer)
        return 0
    rng = random.Random(opts.seed)
    deadline = time.monotonic() + opts.seconds
    while (run.executions < opts.runs) if opts.runs else (time.monotonic() < deadline):
        run.one(Source(rng))
    print(f"stat::number_of_executed_units: {run.executions}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
