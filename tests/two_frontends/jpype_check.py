"""Two frontends in one process: Python (tether_ffi) starts a JVM through JPype whose class path
has the Java frontend (dev.tether.ffi). The Java frontend's tether-core finds Python's host in
the process and runs as its guest (docs/reliability.md), so both languages share one set of
native objects, types and modules: an object made in one language and read in the other is the
same native object, with one canonical wrapper in each.

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
world = scene.Scene("world")
baseline = testing.live_objects()

jpype.startJVM(classpath=[classes], *[f"-Dtether.library.path={library}"], convertStrings=False)
Tether = jpype.JClass("dev.tether.ffi.Tether")
identity = jpype.JClass("java.lang.System").identityHashCode
java = {name: Tether.getGlobalFunc(f"testing.{name}") for name in ("echo", "stash", "take", "live_objects")}

# One host: the same live-object count and the same global functions in both languages.
assert int(java["live_objects"].call()) == testing.live_objects()
assert set(str(n) for n in Tether.listGlobalFuncs()) == set(tether_ffi.list_global_funcs())

# Made in Python, read from Java: one canonical Java wrapper (the side table), and the same
# native object back in Python (its canonical wrapper is `world` itself).
testing.stash("py", world)
seen = java["take"].call("py")
assert str(seen.getClass().getName()) == "dev.tether.ffi.TetherInstance"
assert identity(java["echo"].call(seen)) == identity(seen) == identity(java["echo"].call(seen))
assert str(seen.call("find", "world").get("name")) == "world"
java["stash"].call("back", seen)
assert testing.take("back") is world

# Made in Java (through the module Java loaded: the same plugin, loaded once), read in Python.
module = Tether.loadModule(plugin)
made = module.construct("scene.Scene", "from java")
java["stash"].call("java", made)
from_java = testing.take("java")
assert type(from_java) is scene.Scene and from_java.find("from java").name == "from java"
testing.stash("again", from_java)
assert identity(java["take"].call("again")) == identity(made)
print("one native object, one wrapper per language: Python and Java share the host")

# Nothing leaks: Java's wrappers go with the JVM's garbage collector and Cleaner.
del seen, made, module, from_java
gc.collect()
for _ in range(200):
    jpype.JClass("java.lang.System").gc()
    if testing.live_objects() == baseline:
        break
    jpype.JClass("java.lang.Thread").sleep(10)
assert testing.live_objects() == baseline, (testing.live_objects(), baseline)
print("ok")
