"""Two frontends in one process: Python (tether_ffi) starts a JVM through JPype whose classpath
has the Java frontend (dev.tether.ffi). Both would load the scene plugin. Today the second
frontend refuses to start with a clear error (its tether-core finds the first one's in the
process, docs/reliability.md), and the first keeps working; never a crash.

Run by `cargo xtask test` (java suite): python jpype_check.py CLASSES LIBRARY PLUGIN
"""

from __future__ import annotations

import gc
import sys

import jpype

import tether_ffi

classes, library, plugin = sys.argv[1:4]
testing = tether_ffi.testing
scene = tether_ffi.load_module(plugin)
root = scene.Scene("world")
baseline = testing.live_objects()

jpype.startJVM(classpath=[classes], *[f"-Dtether.library.path={library}"], convertStrings=False)
try:
    jpype.JClass("dev.tether.ffi.Tether").getGlobalFunc("testing.live_objects").call()
except Exception as e:  # JPype's Java exceptions derive from Exception
    chain = []
    while e is not None:
        chain.append(f"{type(e).__name__}: {e}")
        e = e.__cause__
    refusal = next((c for c in chain if "IllegalStateException" in c), None)
    assert refusal is not None, chain
    assert "tether_java cannot start: another tether frontend already runs tether-core in this process" in refusal
    assert "_native" in refusal, refusal  # names the first frontend's library
    print("second frontend refused:", refusal.split(": ", 1)[1])
else:
    raise AssertionError("the Java frontend started beside the Python one")

# The JVM is still usable for everything else, and the first frontend keeps working.
assert int(jpype.JClass("java.lang.Math").max(2, 3)) == 3
assert testing.add(2, 3) == 5
assert testing.echo(root) is root
assert scene.Scene("again").find("again").name == "again"
gc.collect()
assert testing.live_objects() == baseline, (testing.live_objects(), baseline)
print("ok")
