"""Scale (`cargo xtask harden --only scale`): `--objects` live objects made and dropped, then
`--threads` threads each making and dropping `--per-thread` objects at once (every one returned
through `testing.echo`, which must give back the same wrapper, and every 16th handed to another
thread to drop), ending with `testing.live_objects()` back at its baseline. Prints
`figure: KEY = VALUE` lines and one `finding: ...` line per finding.

Usage: scale.py --objects N --threads T --per-thread M
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import threading
import time

os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

import tether_ffi  # noqa: E402

T = tether_ffi.testing


def live() -> int:
    for _ in range(3):
        gc.collect()
    return T.live_objects()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--per-thread", type=int, required=True)
    args = parser.parse_args()
    findings: list[str] = []
    base = live()

    started = time.perf_counter()
    objects = [T.Pair(i, None) for i in range(args.objects)]
    made = time.perf_counter() - started
    peak = T.live_objects() - base
    if peak < args.objects:
        findings.append(f"{args.objects} objects made but live_objects() grew by {peak}")
    if any(objects[i].first != i for i in (0, args.objects // 2, args.objects - 1)):
        findings.append("an object's field reads back wrong")
    started = time.perf_counter()
    del objects
    after_drop = live() - base
    dropped = time.perf_counter() - started
    if after_drop != 0:
        findings.append(f"after dropping every object live_objects() is {after_drop:+} from its baseline")

    handed = collections.deque()  # objects one thread makes and another drops
    errors: list[str] = []

    def storm(k: int) -> None:
        try:
            for i in range(args.per_thread):
                p = T.Pair(i, T.Pair(k, None))
                if T.echo(p) is not p:
                    errors.append(f"thread {k}: echo returned another wrapper")
                if i % 16 == 0:
                    handed.append(p)
                    try:
                        handed.popleft()
                    except IndexError:
                        pass
        except Exception as e:  # noqa: BLE001 - reported as a finding
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    started = time.perf_counter()
    threads = [threading.Thread(target=storm, args=(k,)) for k in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stormed = time.perf_counter() - started
    handed.clear()
    findings.extend(errors[:20])
    after_storm = live() - base
    if after_storm != 0:
        findings.append(f"after the storm live_objects() is {after_storm:+} from its baseline")
    for key, value in [
        ("live objects", args.objects),
        ("made in", f"{made:.2f} s"),
        ("dropped in", f"{dropped:.2f} s"),
        ("storm threads", args.threads),
        ("objects per thread", 2 * args.per_thread),
        ("storm", f"{stormed:.2f} s"),
        ("live objects after", f"{after_storm:+}"),
    ]:
        print(f"figure: {key} = {value}")
    for f in findings:
        print(f"finding: {f}")


main()
