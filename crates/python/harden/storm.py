"""Shutdown storm (`cargo xtask harden --only storms`): the interpreter exits while 8 threads
are inside native calls, with callbacks in flight, and a native thread keeps calling a stored
callback.

Each of 8 daemon threads makes one native call that never returns on its own: native loops
calling Python back (`testing.call_times`), callbacks that sleep in native code without the GIL,
native threads calling back (`testing.call_in_thread`), nested calls. A detached native thread
(`testing.call_in_background`) calls a stored callback every millisecond. Once every thread has
called back at least once (so each is inside its native call), the script waits a random few
milliseconds, prints `storm: 8 threads inside native calls` and ends: the end of the script
(`--mode end`, exit code 0) or `sys.exit(3)` (`--mode exit`). The harden part checks the exit
code, that nothing crashed or hung, and reads the native thread's refusal, printed to stderr by
`call_in_background`, when its call came while the interpreter was finalizing.

Usage: storm.py --mode end|exit --seed N
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time

os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

import tether_ffi  # noqa: E402

T = tether_ffi.testing
FOREVER = 10**12
THREADS = 8


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["end", "exit"], required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    inside = [threading.Event() for _ in range(THREADS)]

    def pairs(i: int):
        def callback():
            inside[i].set()
            return T.Pair(i, T.Pair(i, None))

        return callback

    def sleeps(i: int):
        def callback():
            inside[i].set()
            T.sleep_ms(1)

        return callback

    def lists(i: int):
        def callback():
            inside[i].set()
            return T.echo([T.Pair(k, "a string longer than seven bytes") for k in range(20)])

        return callback

    calls = [
        lambda: T.call_times(pairs(0), FOREVER),  # a native loop calling back
        lambda: T.call_times(lists(1), FOREVER),
        lambda: T.call_times(sleeps(2), FOREVER),  # native -> Python -> native without the GIL
        lambda: T.call_in_thread(lambda: T.call_times(pairs(3), FOREVER)),  # a native thread calling back
        lambda: T.call_in_thread(lambda: T.call_times(sleeps(4), FOREVER)),
        lambda: T.call(lambda: T.call_times(pairs(5), FOREVER)),  # nested native calls
        lambda: T.call_in_thread(lambda: T.call_in_thread(lambda: T.call_times(lists(6), FOREVER))),
        lambda: T.call_times(lambda: (inside[7].set(), list(T.make_array(50)))[1], FOREVER),
    ]
    for call in calls:
        threading.Thread(target=call, daemon=True).start()
    T.call_in_background(lambda: T.Pair(1, 2), FOREVER, 1)
    for i, event in enumerate(inside):
        if not event.wait(60):
            print(f"finding: thread {i} never called back", flush=True)
            sys.exit(2)
    time.sleep(rng.uniform(0, 0.03))
    print(f"storm: {THREADS} threads inside native calls", flush=True)
    if args.mode == "exit":
        sys.exit(3)


main()
