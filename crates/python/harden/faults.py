"""Allocation failures (`cargo xtask harden --only faults`): rounds of
`testing.fail_allocations(n, after)` (n from 1 to 4 allocations of the frontend allocator fail
once `after`, from 0 to 8, have succeeded: the failure lands anywhere in the operation) followed
by one operation that allocates: native functions, constructors, argument
conversions of lists, dicts, strings and bytes, callbacks (from this thread and from a native
one), fields, pickling, and operations that raise an error of their own.

Per round the operation either succeeds, raises `tether_ffi.MemoryError` (a `MemoryError`) or
raises the error it raises anyway; anything else is a finding. The failures left unused are
cancelled and a plain call must work. At the end `testing.live_objects()` must be back at its
baseline. Prints `figure: KEY = VALUE` lines and one `finding: ...` line per finding.

Usage: faults.py --rounds N --seed S
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import random

os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

import tether_ffi  # noqa: E402

T = tether_ffi.testing
LONG = "a string longer than seven bytes"


def raises_value_error(x):
    raise ValueError(f"from the callback: {x}")


def set_field():
    p = T.Pair(1, 2)
    p.first = [1, LONG]
    return p.first


OPERATIONS = [
    ("make_pair", lambda: T.make_pair(1, 2), ()),
    ("constructor", lambda: T.Pair(1, T.Pair(2, LONG)), ()),
    ("make_array", lambda: list(T.make_array(5)), ()),
    ("list argument", lambda: T.echo([1, LONG, [2, 3]]), ()),
    ("dict argument", lambda: T.echo({"key": [1, 2], "other": LONG}), ()),
    ("bytes argument", lambda: T.echo(b"x" * 64), ()),
    ("make_map", lambda: T.make_map(["a", LONG], [1, [2]]), ()),
    ("callback", lambda: T.call(lambda x: [x, LONG], 5), ()),
    ("callback on a native thread", lambda: T.call_in_thread(lambda: {"k": [1, LONG]}), ()),
    ("callback that raises", lambda: T.call(raises_value_error, 1), (ValueError,)),
    ("stash and take", lambda: (T.stash("faults", [1, LONG]), T.take("faults")), (KeyError,)),
    ("field set", set_field, ()),
    ("pickle", lambda: pickle.loads(pickle.dumps(T.Pair(1, LONG))), ()),
    ("wrong argument", lambda: T.add(1, "x"), (TypeError,)),
    ("raise_error", lambda: T.raise_error("KeyError", LONG), (KeyError,)),
]


def live() -> int:
    for _ in range(3):
        gc.collect()
    return T.live_objects()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    findings: list[str] = []
    for _, op, _ in OPERATIONS:  # each once without failures: lazily made objects are made now
        try:
            op()
        except Exception:  # noqa: BLE001 - the ones that raise anyway
            pass
    T.stash_clear()
    base = live()
    used = memory_errors = expected = completed = 0
    for _ in range(args.rounds):
        name, op, allowed = rng.choice(OPERATIONS)
        n = rng.randint(1, 4)
        T.fail_allocations(n, rng.choice([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]))
        try:
            op()
            completed += 1
        except MemoryError as e:
            if not isinstance(e, tether_ffi.MemoryError) or e.kind != "MemoryError":
                findings.append(f"{name}: a MemoryError that is not tether's: {e!r}")
            memory_errors += 1
        except allowed:
            expected += 1
        except Exception as e:  # noqa: BLE001 - anything else is a finding
            findings.append(f"{name}: {type(e).__name__}: {e}")
        used += n - T.fail_allocations(0)
        if T.make_pair(1, 2).first != 1:
            findings.append(f"{name}: a plain call after the failures gave a wrong result")
    T.stash_clear()
    left = live() - base
    if left != 0:
        findings.append(f"live_objects() is {left:+} from its baseline after {args.rounds} rounds")
    for key, value in [
        ("rounds", args.rounds),
        ("injected failures", used),
        ("memory errors", memory_errors),
        ("own errors", expected),
        ("completed", completed),
        ("live objects after", f"{left:+}"),
    ]:
        print(f"figure: {key} = {value}")
    for f in findings[:50]:
        print(f"finding: {f}")


main()
