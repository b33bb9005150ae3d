"""The Python API beyond the conformance list: functions, classes, containers, pickle, errors."""

from __future__ import annotations

import collections.abc
import dis
import gc
import pickle
import subprocess
import sys
import sysconfig
import threading
import weakref

import pytest

import tether_ffi
from conftest import live_now


def test_global_functions():
    echo = tether_ffi.get_global_func("testing.echo")
    assert isinstance(echo, tether_ffi.Function)
    assert echo.__name__ == "testing.echo"
    assert "same native object" in echo.__doc__
    assert echo(5) == 5
    with pytest.raises(tether_ffi.ValueError, match="no global function"):
        tether_ffi.get_global_func("testing.does_not_exist")
    assert tether_ffi.list_global_funcs() == sorted(tether_ffi.list_global_funcs())


def test_keywords_bind_by_the_signature(testing):
    assert testing.add(b=2, a=40) == 42
    assert testing.add(40, b=2) == 42
    p = testing.Pair(second=2, first=1)
    assert (p.first, p.second) == (1, 2)
    with pytest.raises(TypeError) as info:
        testing.add(1, c=2)
    assert str(info.value) == "testing.add() got an unexpected keyword argument 'c'"
    with pytest.raises(TypeError) as info:
        testing.add(1, a=2)
    assert str(info.value) == "testing.add() got multiple values for argument 'a'"


def test_unconvertible_arguments(testing):
    with pytest.raises(OverflowError):
        testing.echo(2**64)


def test_int_arguments_on_the_fast_path(testing):
    # Ints of exactly `int` take the in-place conversion; -1 is also CPython's error value.
    assert testing.add(-1, -1) == -2
    assert testing.add3(2**62, 2**62 - 1, -(2**62)) == 2**62 - 1
    with pytest.raises(OverflowError):
        testing.add(2**63, 0)
    with pytest.raises(tether_ffi.TypeError, match="argument 'a' must be int, not bool"):
        testing.add(True, 1)
    # One-digit ints are read from the object; the digit is 30 bits wide. Both paths (leaf
    # call and a value stored in a field) must agree with Python's own arithmetic.
    edges = [0, 1, -1, 2**30 - 1, -(2**30 - 1), 2**30, -(2**30), 2**60, -(2**63), 2**63 - 1]
    for a in edges:
        assert testing.add(a, 0) == a
        assert testing.echo(a) == a
        assert testing.Pair(a, None).first == a


def test_equality_and_hash_by_identity(testing):
    p = testing.Pair(1, 2)
    q = testing.Pair(1, 2)
    assert p == testing.echo(p) and p != q
    assert p.same_as(testing.echo(p)) and not p.same_as(q)
    assert len({p, testing.echo(p), q}) == 2


def test_collections_become_containers(testing):
    assert testing.sum([1, 2, 3.5]) == 6.5
    assert testing.sum((1, 2)) == 3.0
    arr = testing.echo([1, "two", None])
    assert isinstance(arr, tether_ffi.Array) and list(arr) == [1, "two", None]
    m = testing.echo({"a": 1, "b": [2]})
    assert isinstance(m, tether_ffi.Map)
    assert m["a"] == 1 and list(m["b"]) == [2]


def test_array_is_a_sequence(testing):
    arr = testing.make_array(4)
    assert isinstance(arr, collections.abc.Sequence)
    assert len(arr) == 4 and arr[-1].first == 3
    assert arr[1:3] == [arr[1], arr[2]]
    assert arr[2] in arr and arr.index(arr[2]) == 2 and arr.count(arr[0]) == 1
    assert [x.first for x in reversed(arr)] == [3, 2, 1, 0]
    with pytest.raises(IndexError):
        arr[4]


def test_map_is_a_mapping(testing):
    v = testing.Pair(0, 0)
    m = tether_ffi.Map({"x": 1, "y": v})
    assert isinstance(m, collections.abc.Mapping)
    assert len(m) == 2 and set(m) == {"x", "y"} and "x" in m and "z" not in m
    assert m.get("z", 5) == 5 and m.get("y") is v
    assert dict(m.items()) == {"x": 1, "y": v}
    with pytest.raises(KeyError):
        m["z"]


def test_pickle_round_trip_keeps_sharing(testing):
    shared = testing.Pair(1, "one")
    outer = testing.Pair(shared, shared)
    back = pickle.loads(pickle.dumps(outer))
    assert type(back) is testing.Pair and back is not outer
    assert back.first is back.second
    assert (back.first.first, back.first.second) == (1, "one")
    arr = pickle.loads(pickle.dumps(tether_ffi.Array([shared, shared, 3])))
    assert arr[0] is arr[1] and arr[2] == 3
    m = pickle.loads(pickle.dumps(tether_ffi.Map({"k": shared})))
    assert m["k"].first == 1
    f = pickle.loads(pickle.dumps(tether_ffi.get_global_func("testing.add")))
    assert f is tether_ffi.get_global_func("testing.add")


def test_rebuild_refuses_what_no_pickle_holds(testing):
    # Found by the argument fuzzer (cargo xtask harden): `_rebuild` unpacked any fields value, so
    # a list whose __len__ claims 2**62 items was a MemoryError. A pickle always holds a str key
    # and a tuple of fields; anything else is a TypeError naming what came instead.
    class Lying(list):
        def __len__(self):
            return 2**62

    for fields in [Lying([1, 2]), [1, 2], "12", None]:
        with pytest.raises(TypeError, match="fields must be a tuple"):
            tether_ffi._rebuild("testing.Pair", fields)
    with pytest.raises(TypeError, match="type key must be a str"):
        tether_ffi._rebuild(b"testing.Pair", (1, 2))
    with pytest.raises(ValueError, match="no such native type"):
        tether_ffi._rebuild("testing.Nope", (1, 2))
    p = tether_ffi._rebuild("testing.Pair", (1, 2))
    assert (p.first, p.second) == (1, 2)


def test_register_object_adds_python_methods(testing):
    @tether_ffi.register_object("testing.Pair")
    class Pair:
        def total(self):
            return self.first + self.second

        @property
        def as_tuple(self):
            return (self.first, self.second)

    assert Pair is testing.Pair
    p = testing.make_pair(2, 3)
    assert p.total() == 5 and p.as_tuple == (2, 3)
    with pytest.raises(tether_ffi.ValueError):
        tether_ffi.register_object("no.such.Type")(type("X", (), {}))


def test_generated_classes_are_native_classes_whose_attributes_python_may_set(testing):
    Pair = testing.Pair
    assert type(Pair) is tether_ffi.NativeClass and type(tether_ffi.Object) is tether_ffi.NativeClass
    assert issubclass(tether_ffi.NativeClass, type)
    Pair.patched = 5
    assert Pair.patched == 5 and testing.make_pair(1, 2).patched == 5
    del Pair.patched
    assert not hasattr(Pair, "patched")
    old_repr = Pair.__repr__
    Pair.__repr__ = lambda self: "patched repr"
    try:
        assert repr(Pair(1, 2)) == "patched repr"
    finally:
        Pair.__repr__ = old_repr


def test_a_python_subclass_of_a_generated_class_lives_and_dies(testing):
    class Sub(testing.Pair):
        def total(self):
            return self.first + self.second

    assert type(Sub) is tether_ffi.NativeClass
    Sub.extra = "set"
    s = Sub(2, 3)
    assert s.total() == 5 and s.extra == "set" and isinstance(s, testing.Pair)
    dead = weakref.ref(Sub)
    del Sub, s
    gc.collect()
    assert dead() is None, "the subclass is freed"


def _call_ops(fn):
    return [i.opname for i in dis.get_instructions(fn, adaptive=True) if "CALL" in i.opname]


@pytest.mark.skipif(sys.version_info < (3, 11) or bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="the specializing interpreter of GIL builds since 3.11")
def test_a_constructor_call_is_specialized_and_still_sees_a_replaced_init(testing):
    Pair, made = testing.Pair, []

    def construct(n):
        for _ in range(n):
            made.append(Pair(1, 2))

    construct(200)
    assert any("BUILTIN_CLASS" in op for op in _call_ops(construct)), _call_ops(construct)
    # A class whose __init__ Python replaced is called as type() calls it, specialized or not.
    seen = []
    Pair.__init__ = lambda self, *args: seen.append(args)
    try:
        construct(1)
    finally:
        del Pair.__init__
    assert seen == [(1, 2)]
    construct(1)
    assert seen == [(1, 2)] and (made[-1].first, made[-1].second) == (1, 2)


@pytest.mark.skipif(sys.version_info < (3, 11) or bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="the specializing interpreter of GIL builds since 3.11")
def test_hostile_class_assignments_raise_or_work_and_keep_the_class_specializable(testing):
    Pair = testing.Pair

    class Old:
        def __del__(self):
            Pair.nested = "set"  # an assignment to the class from inside another one

    Pair.replaced = Old()
    Pair.replaced = 2
    assert (Pair.nested, Pair.replaced) == ("set", 2)
    del Pair.nested, Pair.replaced
    with pytest.raises(TypeError, match="__class__ assignment"):
        Pair.__class__ = type
    with pytest.raises(TypeError, match="__class__ assignment"):
        Pair(1, 2).__class__ = testing.Triple
    field = Pair.__dict__["first"]
    del Pair.first
    try:
        with pytest.raises(AttributeError):
            Pair(1, 2).first
    finally:
        Pair.first = field
    assert Pair(3, 4).first == 3

    def construct(n):
        for _ in range(n):
            Pair(1, 2)

    construct(200)
    assert any("BUILTIN_CLASS" in op for op in _call_ops(construct)), "the flag came back after every assignment"


def test_callback_same_function_object(testing):
    calls = []

    def listener(x):
        calls.append(x)

    testing.stash("listener", listener)
    assert testing.take("listener") is listener
    assert testing.call(listener, 1) is None and calls == [1]


def test_callback_result_conversion(testing):
    p = testing.Pair(1, 2)
    assert testing.call(lambda: p) is p
    assert testing.call(lambda: [1, 2])[1] == 2
    assert testing.call(lambda: "x" * 20) == "x" * 20
    o = object()
    assert testing.call(lambda: o) is o  # a host value, returned as itself


def test_error_backtrace_attribute(testing):
    with pytest.raises(tether_ffi.Error) as info:
        testing.raise_error("ValueError", "v")
    assert isinstance(info.value.backtrace, str)


def test_stress_16_threads_fetch_drop_refetch(testing):
    base = live_now()
    arr = testing.make_array(32)
    owner = testing.Pair(arr, None)
    seen = [set() for _ in range(32)]
    errors = []

    def work(k):
        try:
            for n in range(1500):
                i = (k * 7 + n) % 32
                x = owner.first[i]
                assert x is arr[i] and testing.echo(x) is x
                seen[i].add(id(x))
                if n % 50 == 0:
                    testing.stash(f"s{k}", x)
                    assert testing.take(f"s{k}") is x
                del x
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all(len(s) == 1 for s in seen)
    del arr, owner
    assert live_now() == base


def test_no_revival_for_classes_with_del():
    script = r"""
import gc, tether_ffi
T = tether_ffi.testing
deaths = []
@tether_ffi.register_object("testing.Pair")
class Pair:
    def __del__(self):
        deaths.append(1)
p = T.Pair(1, 2)
T.stash("k", p)
del p
gc.collect()
assert deaths == [1], deaths
q = T.take("k")
assert q.first == 1 and T.echo(q) is q
del q
gc.collect()
assert deaths == [1, 1], deaths
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_python_subclass_construction(testing):
    class Named(testing.Pair):
        __slots__ = ()

        def label(self):
            return f"{self.first}:{self.second}"

    n = Named(1, 2)
    assert type(n) is Named and n.label() == "1:2"
    assert testing.echo(n) is n
    del n
    gc.collect()


def test_native_methods_bind(testing):
    p = testing.Pair(1, 2)
    bound = p.swap
    assert bound.__self__ is p
    assert bound().first == 2
    method = testing.Pair.__dict__["swap"]
    assert isinstance(method, tether_ffi._native.Method)
    assert method.__func__.__name__ == "testing.Pair.swap"
    assert testing.Pair.swap(p).second == 1


def test_callables_are_released(testing):
    import weakref

    class Callback:
        def __call__(self, x):
            return x

    cb = Callback()
    ref = weakref.ref(cb)
    assert testing.call(cb, 3) == 3
    testing.stash("cb", cb)
    assert testing.take("cb") is cb
    del cb
    testing.add(1, 1)  # a safe point: queued references are dropped
    gc.collect()
    assert ref() is None


def test_spare_references_die_with_the_wrapper(testing, baseline):
    # Returning a live wrapper's object again leaves a spare reference in its slot, and a
    # wrapper argument lends one to the callee; all of them must go when the wrapper does.
    inner = testing.Pair(None, None)
    outer = testing.Pair(inner, None)
    for _ in range(1000):
        assert testing.echo(inner) is inner
        assert outer.first is inner
    assert testing.make_pair(inner, inner).first is inner  # a lent argument stored in a field
    assert live_now() == baseline + 2
    del outer
    assert live_now() == baseline + 1
    del inner
    assert live_now() == baseline, "spares kept the native object alive"
    # A failing call must not leak a lent argument either.
    x = testing.Pair(None, None)
    for _ in range(10):
        testing.echo(x)
    with pytest.raises(TypeError):
        testing.add3(x, 1, 2)
    with pytest.raises(TypeError):
        testing.echo(x, x)
    del x
    assert live_now() == baseline


def test_callback_functions_keep_no_spares(testing, baseline):
    # A Python callable passed as a Function is its own wrapper; returning it again must not
    # pin the native Function (nothing would ever release a spare there).
    import weakref

    def cb():
        return 1

    ref = weakref.ref(cb)
    holder = testing.Pair(cb, None)  # the native Function lives in the field
    for _ in range(100):
        assert holder.first is cb
        assert testing.echo(cb) is cb
    del holder, cb
    testing.add(1, 1)  # a safe point: queued references are dropped
    gc.collect()
    assert ref() is None
    assert live_now() == baseline


def test_nested_and_recursive_callbacks_are_errors_and_the_interpreter_goes_on(testing, baseline):
    # Each nested `call(cb)` lends a Function while the outer one still holds the spare shell
    # (the lend that allocates); recursion to the interpreter's limit is a RecursionError, an
    # error raised three callbacks deep reaches the caller, and nothing is left behind.
    x = testing.Pair(None, None)
    depth = 0

    def recurse():
        nonlocal depth
        depth += 1
        return testing.call(recurse)

    with pytest.raises(RecursionError):
        testing.call(recurse)
    assert depth > 10

    def inner():
        raise ValueError("inner")

    with pytest.raises(ValueError, match="inner"):
        testing.call(lambda: testing.call(lambda: testing.call(inner)))
    assert testing.call(lambda: testing.call(lambda: x)) is x
    del x, recurse
    assert live_now() == baseline


def test_a_nested_call_whose_new_shell_cannot_be_made_is_a_memory_error_and_the_outer_goes_on(testing, baseline):
    # The outer `call(cb)` holds the spare shell, so the nested call's callable needs a new
    # one: with no memory for it, that call fails with a MemoryError naming its argument,
    # the outer callback goes on, and nothing is left lent or alive.
    x = testing.Pair(None, None)
    seen = []

    def outer():
        testing.fail_allocations(1)
        try:
            testing.call(lambda: seen.append("inner ran"))
        except MemoryError as e:
            seen.append(str(e))
        finally:
            testing.fail_allocations(0)
        return x

    assert testing.call(outer) is x
    assert len(seen) == 1 and "out of memory" in seen[0] and "argument" in seen[0], seen
    assert testing.call(lambda: testing.call(lambda: x)) is x  # lending works again, nested too
    del x, outer
    assert live_now() == baseline


def test_a_callback_on_the_thread_holding_the_gil_runs_while_the_interpreter_finalizes():
    # A `__del__` run by the module teardown (after finalization began) calls native code that
    # calls back into Python on the same thread: it holds the GIL, so the callback runs as any
    # Python code there would (a thread without the GIL is refused: test_conformance's T41).
    script = r"""
import os, tether_ffi
T = tether_ffi.testing
class Late:
    def __del__(self, call=T.call, write=os.write, finalizing=__import__("sys").is_finalizing):
        write(1, b"finalizing %d, callback %d\n" % (finalizing(), call(lambda: 7)))
late = Late()
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "finalizing 1, callback 7\n", (proc.stdout, proc.stderr)


def test_callbacks_during_finalization_return_objects_nest_and_raise():
    # The same thread, later in the teardown: a callback's object result comes back canonical,
    # callbacks nest, and a callback's exception reaches the `__del__` as its own type.
    script = r"""
import os, tether_ffi
T = tether_ffi.testing
class Late:
    def __del__(self, call=T.call, Pair=T.Pair, write=os.write):
        p = call(lambda: Pair(1, None))
        q = call(lambda: call(lambda: p))
        try:
            call(lambda: 1 // 0)
            raised = "nothing"
        except ZeroDivisionError:
            raised = "ZeroDivisionError"
        write(1, b"%d %s %s\n" % (p.first, str(q is p).encode(), raised.encode()))
late = Late()
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 True ZeroDivisionError\n", (proc.stdout, proc.stderr)


def test_callback_results_take_the_slots_spares(testing, baseline):
    # A callback returning a wrapper hands native code one of its slot's spare references,
    # which the return to Python keeps as a spare again: counts must balance however often
    # it runs, and a result whose wrapper dies before the native side is done with it must
    # still own a real reference (the untie releases only the spares left in the slot).
    x = testing.Pair(1, 2)
    for _ in range(10):
        testing.echo(x)  # spares accumulate in x's slot
    for _ in range(1000):
        assert testing.call(lambda: x) is x
    del x
    assert live_now() == baseline

    holder = [testing.Pair(3, 4)]
    for _ in range(10):
        testing.echo(holder[0])
    y = testing.call(lambda: holder.pop())  # the wrapper dies inside the call
    assert holder == [] and y.first == 3 and y.second == 4
    assert live_now() == baseline + 1
    assert testing.call(lambda: y) is y
    del y
    assert live_now() == baseline

    # A callback returning a wrapper it emptied with `_move()` is a typed error, not a read
    # of a released object; the process goes on.
    def moved():
        z = testing.Pair(5, 6)
        z._move()
        return z

    with pytest.raises(ValueError, match="was moved"):
        testing.call(moved)
    assert live_now() == baseline


def test_field_reads_return_the_live_wrapper_or_a_new_one(testing, baseline):
    # A field read returns the value's live wrapper straight from the field (no reference
    # taken), and ties a new one once that wrapper is gone.
    inner = testing.Pair(1, 2)
    outer = testing.Pair(inner, "s")
    for _ in range(100):
        assert outer.first is inner
    assert outer.second == "s"
    del inner  # the only wrapper dies; the field keeps the native object
    assert live_now() == baseline + 2
    again = outer.first
    assert again is outer.first and again.first == 1
    outer.first = 5
    assert outer.first == 5
    assert live_now() == baseline + 2  # `again` still holds the inner object
    del again, outer
    assert live_now() == baseline


def test_claimed_spares_settle_on_every_path(testing, baseline):
    # A leaf call claims its first wrapper argument's spare without taking it; the claim must
    # settle on every path, or the slot's count of spares drifts from the real references.
    x = testing.Pair(7, None)
    for _ in range(3):
        testing.echo(x)  # spares accumulate
    for _ in range(100):
        assert testing.echo(x) is x  # the claimed spare comes back as the result
        assert testing.make_pair(x, x).first is x  # adopted: the claim is consumed
        with pytest.raises(TypeError):
            testing.add3(x, 1, 2)  # released by the callee: consumed too
        with pytest.raises(OverflowError):
            testing.make_pair(x, 2**70)  # conversion failed before the call: never used
        assert x.first == 7
    assert live_now() == baseline + 1
    del x
    assert live_now() == baseline


def test_moved_array_map_and_function_reprs_say_moved(testing):
    a, m = tether_ffi.Array([1, 2]), tether_ffi.Map({1: 2})
    for x, key in [(a, "tether.Array"), (m, "tether.Map")]:
        assert repr(x) != f"<{key} (moved)>"
        x._move()
        assert repr(x) == f"<{key} (moved)>"


def test_a_host_value_whose_del_raises_is_unraisable_and_nothing_else_is_affected(testing, baseline):
    import sys

    class Grumpy:
        def __del__(self):
            raise RuntimeError("grumpy __del__")

    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_value)
    try:
        testing.stash("grumpy", Grumpy())
        testing.stash_clear()  # the native release; the reference drops at the next safe point
        assert testing.add(1, 2) == 3
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert [str(e) for e in seen] == ["grumpy __del__"]
    assert live_now() == baseline


def test_a_host_value_stored_and_released_from_16_threads(testing, baseline):
    import threading

    class Payload:
        pass

    o = Payload()
    start = threading.Barrier(16)
    errors = []

    def work(i):
        try:
            start.wait()
            for j in range(300):
                key = f"t{i}"
                testing.stash(key, o)
                assert testing.take(key) is o
                testing.drop_in_thread(testing.Pair(o, j))
                assert testing.echo([o])[0] is o
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    testing.add(1, 2)  # releases what foreign threads queued
    gc.collect()
    assert sys.getrefcount(o) == 2, "every native reference was released"
    assert live_now() == baseline


# ---- nonblocking calls and callables lent to a call ----------------------------------------


def test_a_nonblocking_call_calls_back_on_the_calling_thread(testing):
    flags = tether_ffi._native.function_info(tether_ffi.get_global_func("testing.call"))[3]
    nonblocking = tether_ffi._native.CONSTANTS["FUNC_NONBLOCKING"]
    assert flags & nonblocking, "testing.call keeps the GIL for its callback"
    here = threading.get_ident()
    assert testing.call(lambda: threading.get_ident()) == here
    # Nested calls, a GIL-releasing call inside the callback, and an exception that crosses
    # the native frames as itself.
    assert testing.call(lambda: testing.call(lambda a, b: a * b, 6, 7)) == 42
    assert testing.call(lambda: testing.call_in_thread(lambda x: x + 1, 41)) == 42
    boom = KeyError("from the callback")
    with pytest.raises(KeyError) as info:
        testing.call(lambda: (_ for _ in ()).throw(boom))
    assert info.value is boom


NONBLOCKING_GIVEN_A_BLOCKING_FUNCTION = r"""
import tether_ffi
T = tether_ffi.testing
in_thread = tether_ffi.get_global_func("testing.call_in_thread")
# call_in_thread waits for a native thread that calls back into Python: testing.call must not
# keep the GIL for it (the thread would wait for the GIL forever).
assert T.call(in_thread, lambda: 42) == 42
assert T.call(T.call, in_thread, lambda x: x * 2, 21) == 42
print("ok")
"""


def test_a_nonblocking_call_given_a_blocking_function_releases_the_gil():
    # In a child process: if the GIL were kept, it would deadlock (the timeout ends it).
    proc = subprocess.run(
        [sys.executable, "-c", NONBLOCKING_GIVEN_A_BLOCKING_FUNCTION], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_callables_lent_to_calls_leave_nothing_behind(testing, baseline):
    import weakref

    def cb(x=1):
        return x

    ref = weakref.ref(cb)
    for i in range(1000):
        assert testing.call(cb, i) == i
        assert testing.call(lambda: i) == i  # a new callable every time
    assert testing.call(lambda f, g: f(g()), lambda x: x + 1, lambda: 41) == 42  # two in one call
    assert live_now() == baseline, "lent Functions were all given back"
    del cb
    gc.collect()
    assert ref() is None, "a lent Function held no reference to its callable"


def test_a_lent_function_the_callee_keeps_is_the_callables_function(testing, baseline):
    import weakref

    def cb():
        # Inside its own call: the Function lent to the call is cb's Function.
        testing.stash("inside", cb)
        return 7

    ref = weakref.ref(cb)
    assert testing.call(cb) == 7
    assert live_now() == baseline + 1, "kept by the stash"
    testing.stash("again", cb)  # the same Function: no second one
    assert live_now() == baseline + 1
    assert testing.call(cb) == 7  # a kept callable's Function is not lent again
    assert testing.take("inside") is cb and testing.take("again") is cb
    assert testing.echo(cb) is cb
    del cb
    testing.add(1, 1)  # a safe point: queued references are dropped
    gc.collect()
    assert ref() is None, "released once the stash let go"
    assert live_now() == baseline


def test_class_calls_construct_from_the_callers_arguments(testing):
    # `testing.Pair(...)` goes straight to the constructor (the class's vectorcall); the
    # errors are the constructor's.
    p = testing.Pair(1, second=2)
    assert (p.first, p.second) == (1, 2) and type(p) is testing.Pair
    with pytest.raises(TypeError, match="missing 1 required argument: 'second'"):
        testing.Pair(1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'third'"):
        testing.Pair(1, 2, third=3)
    with pytest.raises(TypeError, match="has no registered constructor"):
        tether_ffi.namespace("testing").Aligned()


REGISTERED_INIT = r"""
import tether_ffi
T = tether_ffi.testing
calls = []

@tether_ffi.register_object("testing.Triple")
class _Triple:
    def __init__(self, *args, **kwargs):
        calls.append((args, kwargs))

t = T.Triple(1, 2, third=3)
assert (t.first, t.second, t.third) == (1, 2, 3)
assert calls == [((1, 2), {"third": 3})], calls
print("ok")
"""


def test_a_generated_class_given_an_init_from_python_runs_it():
    # A class whose __init__ Python replaced is called as any class is (new, then init).
    proc = subprocess.run([sys.executable, "-c", REGISTERED_INIT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_a_wrapper_that_is_its_objects_only_owner_frees_it(testing, baseline):
    # The object dies with its wrapper (its block is not cached); one that native code also
    # holds keeps its block and comes back at the same id.
    p = testing.Pair(1, 2)
    assert live_now() == baseline + 1
    del p
    assert live_now() == baseline
    q = testing.Pair(3, 4)
    testing.stash("q", q)
    before = id(q)
    del q
    again = testing.take("q")
    assert id(again) == before and again.first == 3
    del again
    assert live_now() == baseline


def test_leaf_int_calls_through_the_int_entry_give_the_typed_calls_values_and_errors(testing):
    # A leaf of int parameters and result given small ints takes its int entry (no cells);
    # every other argument the general path. Both give the same values and errors.
    assert testing.add3(1, 2, 3) == 6
    assert testing.add3(2**30 - 1, 2**30 - 1, -(2**30 - 1)) == 2**30 - 1
    assert testing.add3(2**40, 2**40, 1) == 2**41 + 1  # multi-digit: the general path
    message = r"testing.fail_allocations\(\) argument 'n' must not be negative, got -1"
    for n in [-1, -(2**40)]:
        with pytest.raises(tether_ffi.ValueError, match=message.replace("-1", str(n))):
            testing.fail_allocations(n, 0)
    assert testing.fail_allocations(0, 0) == 0
    with pytest.raises(tether_ffi.TypeError, match="argument 'a' must be int, not str"):
        testing.add3("1", 2, 3)


def test_fields_keep_every_value_whether_it_fits_the_cell_word_or_its_box(testing, baseline):
    # A field is one word: objects, None, bools, ints of 61 bits and floats with three low
    # zero bits live in it, anything else in a box the cell owns. Every kind reads back as
    # stored, and replacing boxed values with objects and back frees what was replaced.
    import math
    import struct
    values = [None, True, False, 0, -1, 2**60 - 1, -(2**60), 2**60, -(2**60) - 1, 2**63 - 1, -(2**63),
              0.0, -0.0, 1.5, 0.1, 5e-324, math.inf, -math.inf, "", "seven!!", "a longer string", b"\x00"]
    p = testing.Pair(None, None)
    for v in values:
        p.first = v
        got = p.first
        assert type(got) is type(v) and got == v, v
        if isinstance(v, float):
            assert struct.pack("<d", got) == struct.pack("<d", v), v
        p.second = testing.Pair(v, None)
        assert p.second.first == v
    p.first = math.nan
    assert math.isnan(p.first)
    del p
    assert live_now() == baseline


def test_a_million_objects_each_holding_the_next_are_freed_and_the_process_goes_on(testing, baseline):
    # Dropping the head releases the whole chain through native fields: the core bounds how
    # deep destructions nest (this crashed the interpreter with a stack overflow before).
    head = None
    for i in range(1_000_000):
        head = testing.Pair(head, 0.1)
    assert live_now() == baseline + 1_000_000
    del head
    assert live_now() == baseline
    assert testing.Pair(1, 2).first == 1


def test_field_reads_and_int_calls_refuse_what_does_not_fit_and_leak_nothing(testing):
    # Field descriptors read cells through the place found once per field (`CellAccess`), and
    # typed calls of int parameters take a fast path that declines on a mismatch: neither may
    # read what is not there, and a wrapper given to an int parameter is released.
    x = testing.Pair(None, None)
    p = testing.Pair(x, None)
    base = live_now()
    for _ in range(100):
        with pytest.raises(tether_ffi.TypeError, match="argument 'a' must be int, not testing.Pair"):
            testing.add3(x, 2, 3)
        with pytest.raises(tether_ffi.TypeError, match="argument 'c' must be int, not testing.Pair"):
            testing.add3(1, 2, p)
    assert live_now() == base
    q = testing.Pair(p, p)
    q.first = q  # a cycle through a cell field
    assert q.first is q and q.first.first is q
    q.first = None
    descriptor = next(c.__dict__["first"] for c in type(x).__mro__ if "first" in c.__dict__)
    with pytest.raises(TypeError, match="doesn't apply"):
        descriptor.__get__(object())
    moved = testing.Pair(x, None)
    moved._move()
    with pytest.raises(ValueError, match="was moved"):
        moved.first
    assert p.first is x


def test_a_field_read_returns_the_live_wrapper_for_the_class_a_subclass_and_while_other_threads_write(testing):
    # The read of the class's own instances runs a path of its own (no call, one try to hold
    # the cell); a subclass's instance and a cell another thread holds take the general read.
    x = testing.Pair(None, None)

    class Sub(testing.Pair):
        pass

    own, sub = testing.Pair(x, 1), Sub(x, 2)
    assert own.first is x and sub.first is x and sub.second == 2
    inner = testing.Pair(testing.Pair(None, None), None)
    assert inner.first is inner.first, "a wrapper made by the first read is the second's"
    shared, stop = testing.Pair(x, None), threading.Event()

    def write():
        while not stop.is_set():
            shared.first = testing.Pair(None, None)
            shared.first = x
            shared.first = 5

    writers = [threading.Thread(target=write) for _ in range(3)]
    for w in writers:
        w.start()
    try:
        for _ in range(50_000):
            v = shared.first
            assert v is x or v == 5 or type(v) is testing.Pair
    finally:
        stop.set()
        for w in writers:
            w.join()
    shared.first = x
    assert shared.first is x


def test_a_one_wrapper_leaf_call_names_an_emptied_argument_and_temporaries_die_with_their_wrappers(testing):
    # `echo(x)` runs its own path (the wrapper alone, no arena); an emptied wrapper there is
    # still the argument's typed error, and a call after it works.
    x = testing.Pair(1, 2)
    assert testing.echo(x) is x
    x._move()
    with pytest.raises(ValueError, match="argument .*was moved"):
        testing.echo(x)
    y = testing.Pair(3, 4)
    assert testing.echo(y) is y
    # A temporary's wrapper holds its object's only reference: the two die together, with
    # no untie (`Frontend::take_sole`), and nothing is left behind.
    baseline = live_now()
    for _ in range(1000):
        testing.Pair(y, y)
    assert live_now() == baseline
    assert testing.Pair(y, None).first is y


def test_a_constructor_given_one_wrapper_twice_borrows_charged_spares_and_leaks_none(testing):
    # `Pair(x, x)`: the second argument is lent a spare from `x`'s slot, which is charged with
    # several references at once when it has none. Those references belong to the slot: they
    # keep `x` alive exactly as long as before, go when its wrapper goes, and a call that fails
    # on a later argument gives back what it took.
    baseline = live_now()
    x = testing.Pair(1, 2)
    pairs = [testing.Pair(x, x) for _ in range(100)]
    assert all(p.first is x and p.second is x for p in pairs)
    moved = testing.Pair(None, None)
    moved._move()
    for _ in range(50):
        with pytest.raises(ValueError, match="argument 'second'.*was moved"):
            testing.Pair(x, moved)
    pairs = pairs[:3]
    # The wrapper dies while the pairs still hold the object: the slot's spares go with the
    # wrapper, the object stays, and a new canonical wrapper comes back for it.
    x_id = id(x)
    del x
    gc.collect()
    again = pairs[0].first
    assert again is pairs[1].second and again.first == 1
    assert testing.Pair(again, again).second is again
    del again, pairs, moved
    gc.collect()
    assert live_now() == baseline, (x_id, live_now(), baseline)
