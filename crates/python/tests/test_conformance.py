"""One test per scenario id of docs/conformance.md (T01..T56)."""

from __future__ import annotations

import builtins
import gc
import inspect
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import weakref

import pytest

import tether_ffi
from conftest import bad_abi_plugin_path, live_now, plugin_path, plugin_file

TESTING_NAMES = [
    "echo", "make_pair", "add", "add3", "sum", "call", "call_in_thread", "raise_error", "panic",
    "stash", "take", "stash_clear", "drop_in_thread", "live_objects", "make_aligned",
    "is_aligned", "make_array", "make_map", "call_times", "call_in_background", "sleep_ms", "fail_allocations",
]


# ---- identity ------------------------------------------------------------------------------

def test_T01_echo_identity(testing):
    p = testing.make_pair(1, 2)
    assert testing.echo(p) is p
    for value in [0, -5, 2**62, 1.5, -0.0, True, False, "", "short", "a longer string than seven bytes",
                  "ünïcödé ✓", b"", b"bytes", b"a longer byte string", None]:
        out = testing.echo(value)
        assert out == value and type(out) is type(value)


def test_T02_field_identity(testing):
    q = testing.Pair(3, 4)
    p = testing.Pair(q, None)
    assert p.first is p.first
    assert p.first is q
    r = testing.Pair(5, 6)
    p.first = r
    assert p.first is r
    p.second = "text"
    assert p.second == "text"


def test_T03_container_identity(testing):
    arr = testing.make_array(3)
    assert arr[0] is arr[0]
    assert [x for x in arr][1] is arr[1]
    v = testing.Pair(1, 2)
    m = tether_ffi.Map({"k": v, 7: "seven"})
    assert m["k"] is v and m[7] == "seven"
    a = tether_ffi.Array([v, 1, "x"])
    assert a[0] is v and a[1] == 1 and a[2] == "x"
    made = testing.make_map(["a", "b"], [v, 2])
    assert made["a"] is v and made["b"] == 2


def test_T04_callback_receives_caller_wrapper(testing):
    x = testing.Pair(1, 2)
    seen = []

    def cb(arg):
        seen.append(arg)
        return arg

    assert testing.call(cb, x) is x
    assert seen[0] is x


def test_T05_function_passed_twice(testing):
    def f(a):
        return a

    assert testing.echo(f) is f
    assert testing.echo(f) is f
    testing.stash("T05", f)
    assert testing.take("T05") is f
    native = tether_ffi.get_global_func("testing.add")
    assert testing.echo(native) is native


def test_T06_constructor_ties(testing):
    p = testing.Pair(1, 2)
    assert p.first == 1 and p.second == 2
    assert testing.echo(p) is p
    assert type(p) is testing.Pair
    text = repr(p)
    assert "testing.Pair" in text and "first=1" in text and "second=2" in text


def test_T07_reflection(testing):
    cls = testing.Pair
    assert issubclass(cls, tether_ffi.Object)
    for name in ("first", "second"):
        descr = inspect.getattr_static(cls, name)
        assert hasattr(descr, "__get__") and hasattr(descr, "__set__")
    assert callable(inspect.getattr_static(cls, "swap"))
    p = cls(1, 2)
    s = p.swap()
    assert (s.first, s.second) == (2, 1)
    names = tether_ffi.list_global_funcs()
    for n in TESTING_NAMES:
        assert f"testing.{n}" in names
    # A subtype: reflection lists every member, inherited ones first, and they work.
    info = testing.Triple.__tether_type__
    assert info.key == "testing.Triple"
    assert [(f.name, f.settable) for f in info.fields] == [("first", True), ("second", True), ("third", True)]
    assert [m.name for m in info.methods] == ["swap"]
    assert issubclass(testing.Triple, testing.Pair)
    t = testing.Triple(1, 2, 3)
    assert (t.first, t.second, t.third) == (1, 2, 3)
    assert (t.swap().first, t.first) == (2, 1)
    assert repr(t) == "testing.Triple(first=1, second=2, third=3)"
    assert [f.name for f in testing.Pair.__tether_type__.fields] == ["first", "second"]


# ---- lifetime ------------------------------------------------------------------------------

def test_T10_wrapper_dies_native_lives(testing, baseline):
    p = testing.Pair(10, "ten")
    before = id(p)
    testing.stash("T10", p)
    del p
    gc.collect()
    back = testing.take("T10")
    assert id(back) == before
    assert back.first == 10 and back.second == "ten"
    assert testing.echo(back) is back
    del back
    assert live_now() == baseline


def test_T11_native_dies_after_wrapper(testing, baseline):
    p = testing.Pair(testing.Pair(1, 2), "x")
    assert live_now() > baseline
    del p
    assert live_now() == baseline


def test_T12_no_growth(testing, baseline):
    Pair = testing.Pair
    for i in range(100_000):
        p = Pair(i, None)
        if i % 3 == 0:
            testing.echo(p)
        if i % 10_000 == 0:
            gc.collect()
    del p
    assert live_now() == baseline


def test_T13_move_releases_early(testing, baseline):
    p = testing.Pair(1, 2)
    out = testing.echo(p._move())
    assert out is not p
    assert out.first == 1
    with pytest.raises(tether_ffi.ValueError, match="moved"):
        p.first
    del out
    # p's wrapper lives in its object's memory (one block): the object is gone already
    # (below), the memory goes with p.
    assert live_now() == baseline + 1
    del p
    assert live_now() == baseline
    # A moved reference that is never passed is released when the token dies: the value
    # (and the host value it holds) at once, though the emptied wrapper lives on.
    payload = Payload()
    watch = weakref.ref(payload)
    q = testing.Pair(payload, 4)
    del payload
    token = q._move()
    del token
    testing.add(1, 2)  # any entry releases queued host values
    assert watch() is None
    with pytest.raises(tether_ffi.ValueError, match="moved"):
        q.first
    # Fetched again while the emptied wrapper lives: a new wrapper in a block of its own.
    r = testing.Pair(5, 6)
    token = r._move()
    again = testing.echo(token)
    assert again is not r and again.first == 5
    del again, r, q
    assert live_now() == baseline


def test_T13_moved_wrappers_in_their_objects_memory_under_threads(testing, baseline):
    # Wrappers live in their objects' memory: emptied ones outlive their objects (freed on
    # other threads too), refetches take blocks of their own, and nothing is left behind.
    errors = []

    def churn(seed):
        try:
            for i in range(1000):
                p = testing.Pair(seed * 10_000 + i, None)
                again = testing.echo(p._move())  # fetched again while the emptied p lives
                assert again is not p and again.first == seed * 10_000 + i
                testing.drop_in_thread(again)
                del again
                with pytest.raises(tether_ffi.ValueError, match="moved"):
                    p.first
                del p
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    testing.add(1, 2)  # any entry releases what other threads queued
    assert live_now() == baseline


def test_T14_side_table_identity(testing):
    # The testing functions were made at init, before the frontend allocator was installed.
    echo = tether_ffi.get_global_func("testing.echo")
    assert tether_ffi._native.slot_kind(echo) == "side"
    assert testing.echo(echo) is echo
    assert tether_ffi.get_global_func("testing.echo") is echo
    p = testing.Pair(1, 2)
    assert tether_ffi._native.slot_kind(p) == "prefix"


def test_T15_alignment(testing, baseline):
    for align in (8, 16, 32, 64, 4096):
        x = testing.make_aligned(align)
        assert testing.is_aligned(x)
        assert testing.echo(x) is x
        del x
    assert live_now() == baseline


class Payload:
    """A user object with no native conversion: crosses as a host value."""

    def __init__(self, tag=0):
        self.tag = tag

    def __eq__(self, other):
        return isinstance(other, Payload) and other.tag == self.tag

    __hash__ = None


def test_T16_host_values_come_back_as_themselves(testing, baseline):
    o = Payload(1)
    assert testing.echo(o) is o
    assert testing.Pair(o, None).first is o  # stored in a field
    p = testing.Pair(None, None)
    p.second = o
    assert p.second is o
    assert testing.echo([o, 1])[0] is o  # an Array item
    assert testing.echo({"k": o})["k"] is o  # a Map value
    assert tether_ffi.Array([o])[0] is o
    got = []
    testing.call(got.append, o)  # passed to a callback
    assert got[0] is o
    for value in [{1, 2}, frozenset(), bytearray(b"x"), range(3), 2j, threading.Lock(), Payload]:
        assert testing.echo(value) is value
    # Another language's host value is a TypeError naming both languages, not a crash.
    with pytest.raises(tether_ffi.TypeError) as info:
        testing.foreign_value("Thing")
    assert str(info.value) == (
        "Thing (a Testing value) held by native code cannot be used from Python: "
        "host values only go back to their own language"
    )
    # A typed parameter names the parameter and the Python type.
    with pytest.raises(tether_ffi.TypeError, match=r"^testing.add\(\) argument 'a' must be int, not Payload$"):
        testing.add(o, 1)
    del p, got
    assert live_now() == baseline


def test_T16_host_values_live_while_native_code_holds_them(testing, baseline):
    import weakref

    o = Payload(2)
    ref = weakref.ref(o)
    testing.stash("held", o)
    del o
    gc.collect()
    assert ref() is not None, "native code holds it"
    assert testing.take("held") is ref()
    gc.collect()
    assert ref() is None, "released when the last native reference went"
    # Released from a foreign native thread: deferred to a thread with the GIL.
    o = Payload(3)
    ref = weakref.ref(o)
    testing.drop_in_thread(testing.Pair(o, None))
    del o
    testing.add(1, 2)  # the next entry releases what the thread queued
    gc.collect()
    assert ref() is None
    assert live_now() == baseline


def test_T16_no_leak_over_100k_round_trips(testing, baseline):
    import weakref

    o = Payload(4)
    for _ in range(100_000):
        assert testing.echo(o) is o
    q = Payload(5)
    for _ in range(1000):
        testing.stash("k", q)
        testing.take("k")
    assert sys.getrefcount(o) == 2 and sys.getrefcount(q) == 2, "no Python reference left behind"
    ref = weakref.ref(o)
    del o, q
    gc.collect()
    assert ref() is None
    assert live_now() == baseline


def test_T16_pickle_keeps_host_values_that_pickle(testing, baseline):
    import pickle

    p = testing.Pair(Payload(6), [Payload(7)])
    back = pickle.loads(pickle.dumps(p))
    assert back.first == Payload(6) and back.second[0] == Payload(7)
    assert type(back.first) is Payload
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(testing.Pair(threading.Lock(), None))
    del p, back
    assert live_now() == baseline


def test_T17_weak_references_to_wrappers(testing, baseline):
    import weakref

    # Only classes declared weak-referenceable take them (testing.Triple is, testing.Pair is
    # not: its wrapper lives in its object's memory, with no room for the list).
    with pytest.raises(TypeError, match="cannot create weak reference to 'testing.Pair' object"):
        weakref.ref(testing.Pair(1, 2))
    echo = tether_ffi.get_global_func("testing.echo")
    assert weakref.ref(echo)() is echo, "Functions take them, as Python's functions do"
    p = testing.Triple(1, 2, 3)
    ref = weakref.ref(p)
    assert ref() is p
    finalized = []
    weakref.finalize(p, finalized.append, "finalized")
    values, keys = weakref.WeakValueDictionary(), weakref.WeakKeyDictionary()
    values["p"], keys[p] = p, "p"
    assert values["p"] is p and keys[p] == "p"
    before = id(p)
    testing.stash("T17", p)
    del p
    gc.collect()
    # A weak reference dies with its wrapper, even though the native object lives on.
    assert ref() is None and finalized == ["finalized"]
    assert len(values) == 0 and len(keys) == 0
    again = testing.take("T17")
    assert id(again) == before, "the revived wrapper keeps its id"
    assert weakref.ref(again)() is again
    # A weak reference's callback may fetch the object again while its wrapper dies.
    testing.stash("T17", again)
    fetched = []
    watch = weakref.ref(again, lambda _: fetched.append(testing.take("T17")))
    del again
    gc.collect()
    assert watch() is None and id(fetched[0]) == before and fetched[0].first == 1
    del fetched
    assert live_now() == baseline


def test_T17_a_python_subclass_takes_weak_references_and_its_callback_may_fetch_the_object(testing, baseline):
    import weakref

    # CPython gives a subclass of a class without the list one of its own, and empties it
    # before the base's dealloc unties the dying wrapper: the callback's fetch gets a new one.
    p = LabelledPair(1, 2, "x")
    testing.stash("T17s", p)
    fetched = []
    watch = weakref.ref(p, lambda _: fetched.append(testing.take("T17s")))
    before = id(p)
    del p
    gc.collect()
    assert watch() is None and len(fetched) == 1
    got = fetched.pop()
    assert isinstance(got, testing.Pair) and got.first == 1 and testing.echo(got) is got
    assert type(got) is testing.Pair and id(got) != before, "a new wrapper, not the dying subclass instance"
    del got
    assert live_now() == baseline


class LabelledPair(tether_ffi.testing.Pair):
    """A Python subclass whose __init__ takes other arguments than the native constructor."""

    def __init__(self, first, second, label):
        super().__init__(first, second)
        self.label = label

    def describe(self):
        return f"{getattr(self, 'label', '?')}:{self.first}"


def test_T18_subclass_identity_across_revival(testing, baseline):
    import weakref

    p = LabelledPair(1, 2, "x")
    assert type(p) is LabelledPair and p.describe() == "x:1"
    assert testing.echo(p) is p and testing.Pair(p, None).first is p
    before = id(p)
    testing.stash("T18", p)
    ref = weakref.ref(p)
    del p
    gc.collect()
    assert ref() is None
    back = testing.take("T18")
    # Revival in place keeps the class and the id; the instance's __dict__ was cleared when the
    # wrapper died (docs/python.md), so attributes set in __init__ are gone.
    assert type(back) is LabelledPair and id(back) == before
    assert back.__dict__ == {} and back.describe() == "?:1"
    assert testing.echo(back) is back
    # __slots__ subclasses and subclasses of subclasses too.
    class Slotted(testing.Pair):
        __slots__ = ("extra",)

    s = Slotted(3, 4)
    s.extra = 5
    sid = id(s)
    testing.stash("T18", s)
    del s
    gc.collect()
    s = testing.take("T18")
    assert type(s) is Slotted and id(s) == sid and not hasattr(s, "extra") and s.second == 4
    # A subclass whose __init__ does not call the base __init__: a clear error at first use.
    class Forgetful(testing.Pair):
        def __init__(self):
            pass

    f = Forgetful()
    with pytest.raises(ValueError, match=r"has no native object: its __init__ did not call the base class __init__"):
        f.first
    with pytest.raises(ValueError):
        testing.echo(f)
    del back, s, f
    gc.collect()
    assert live_now() == baseline


def test_T18_no_leak_over_subclass_revivals(testing, baseline):
    for i in range(2000):
        p = LabelledPair(i, None, "l")
        testing.stash("k", p)
        del p
        assert type(testing.take("k")) is LabelledPair
    gc.collect()
    assert live_now() == baseline


# ---- threads -------------------------------------------------------------------------------

def test_T20_threads_share_wrappers(testing, baseline):
    arr = testing.make_array(8)
    shared = [testing.Pair(i, None) for i in range(8)]
    ids: list[set[int]] = [set() for _ in range(8)]
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(seed: int) -> None:
        try:
            start.wait()
            for n in range(400):
                i = (seed + n) % 8
                x = arr[i]
                assert x is arr[i]
                assert testing.echo(x) is x
                assert x.first == i
                ids[i].add(id(x))
                s = testing.echo(shared[i])
                assert s is shared[i]
                made = testing.make_pair(x, s)  # releases the GIL
                assert made.first is x and made.second is s
                assert testing.call(lambda v: v, x) is x
                del x, made
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    # Revival keeps the address: every thread saw one wrapper per object, always.
    assert all(len(s) == 1 for s in ids)
    del arr, shared
    assert live_now() == baseline


def test_T21_callback_from_native_thread(testing):
    x = testing.Pair(1, 2)
    seen = []

    def cb(arg, k):
        seen.append((arg, threading.get_ident()))
        return k * 2

    assert testing.call_in_thread(cb, x, 21) == 42
    assert seen[0][0] is x
    assert seen[0][1] != threading.get_ident()


def test_T22_free_on_foreign_thread(testing, baseline):
    class PairSubclass(testing.Pair):
        """Its instances are blocks of their own, not in their object's memory."""

    # A subclass instance's block is cached when it dies, and freed under the GIL.
    testing.stash("T22", PairSubclass(1, 2))
    gc.collect()
    clear = tether_ffi.get_global_func("testing.stash_clear")
    testing.call_in_thread(clear)  # the Pair dies on a native thread without the GIL
    assert tether_ffi._native.pending_releases() >= 1
    testing.add(1, 2)  # the next entry releases the queued block
    assert tether_ffi._native.pending_releases() == 0
    # A generated class's wrapper lives in its object's memory: it goes with the object.
    testing.stash("T22", testing.Pair(1, 2))
    testing.call_in_thread(clear)
    assert tether_ffi._native.pending_releases() == 0
    assert live_now() == baseline
    p = testing.Pair(3, 4)
    testing.drop_in_thread(p)  # drops a native reference on another thread
    assert p.first == 3
    del p
    assert live_now() == baseline


# ---- faults --------------------------------------------------------------------------------

def test_T30_wrong_argument_type(testing):
    with pytest.raises(TypeError) as info:
        testing.add(1, "x")
    e = info.value
    assert isinstance(e, tether_ffi.Error) and isinstance(e, tether_ffi.TypeError)
    assert e.kind == "TypeError"
    assert str(e) == "testing.add() argument 'b' must be int, not str"
    # A value with no conversion crosses as a host value; a typed parameter names its type.
    class Payload:
        pass

    with pytest.raises(TypeError) as info:
        testing.add(1, Payload())
    assert isinstance(info.value, tether_ffi.TypeError)
    assert str(info.value) == "testing.add() argument 'b' must be int, not Payload"
    # A value that cannot cross at all still names the parameter.
    with pytest.raises(OverflowError) as info:
        testing.add(1, 2**70)
    assert str(info.value).startswith("testing.add() argument 'b': "), str(info.value)
    # An int subclass too big for 64 bits whose __str__ raises: still a typed, named error.
    class BadStr(int):
        def __str__(self):
            raise builtins.RuntimeError("no str")

    with pytest.raises(OverflowError, match=r"^testing\.add\(\) argument 'b': "):
        testing.add(1, BadStr(2**80))
    assert testing.add(1, 2) == 3


def test_T31_wrong_arity(testing):
    with pytest.raises(TypeError) as info:
        testing.add(1)
    assert str(info.value) == "testing.add() missing 1 required argument: 'b'"
    with pytest.raises(TypeError) as info:
        testing.add(1, 2, 3)
    assert str(info.value) == "testing.add() takes 2 positional arguments but 3 were given"


def test_T32_rust_panic(testing, capfd):
    with pytest.raises(tether_ffi.RustPanic) as info:
        testing.panic("boom")
    assert info.value.kind == "RustPanic"
    assert str(info.value) == "boom"
    assert isinstance(info.value, builtins.RuntimeError)
    # Caught inside the native call: recorded as the error's backtrace, not printed.
    assert "panicked at" in info.value.backtrace
    assert "boom" not in capfd.readouterr().err


def test_T33_callback_raises(testing):
    err = ValueError("bad value from a callback")

    def cb():
        raise err

    with pytest.raises(ValueError) as info:
        testing.call(cb)
    assert info.value is err

    class Custom(Exception):
        pass

    def cb2(x):
        raise Custom(f"custom {x}")

    with pytest.raises(Custom, match="custom 5"):
        testing.call(cb2, 5)
    # Across a native thread as well.
    with pytest.raises(Custom, match="custom 6"):
        testing.call_in_thread(cb2, 6)


@pytest.mark.parametrize(
    "kind, builtin",
    [
        ("TypeError", builtins.TypeError),
        ("ValueError", builtins.ValueError),
        ("IndexError", builtins.IndexError),
        ("KeyError", builtins.KeyError),
        ("AttributeError", builtins.AttributeError),
        ("RuntimeError", builtins.RuntimeError),
        ("MemoryError", builtins.MemoryError),
        ("SomethingElse", builtins.RuntimeError),
    ],
)
def test_T34_error_kinds(testing, kind, builtin):
    with pytest.raises(builtin) as info:
        testing.raise_error(kind, f"message for {kind}")
    e = info.value
    assert isinstance(e, tether_ffi.Error)
    assert e.kind == kind
    assert str(e) == f"message for {kind}"
    assert isinstance(e.backtrace, str)
    if kind in tether_ffi._errors.KIND_CLASSES:
        assert type(e) is getattr(tether_ffi, kind)


def test_T34_every_core_error_kind_has_its_class():
    # The core's kinds (constants.rs ERROR_KINDS) are exactly the ones mapped to classes.
    assert {name for name, _ in tether_ffi._native.ERROR_KINDS} == set(tether_ffi._errors.KIND_CLASSES)
    # Each kind crosses as its code, the one in the shared constants (ERROR_TYPE_ERROR, ...).
    for name, code in tether_ffi._native.ERROR_KINDS:
        constant = "ERROR_" + re.sub(r"([a-z])([A-Z])", r"\1_\2", name).upper()
        assert tether_ffi._native.CONSTANTS[constant] == code, constant
    assert tether_ffi._native.CONSTANTS["TYPE_ARRAY"] == tether_ffi._native.type_index_of("tether.Array")


def test_T35_moved_handle_used_again(testing):
    p = testing.Pair(1, 2)
    token = p._move()
    with pytest.raises(tether_ffi.ValueError, match="moved"):
        testing.echo(p)
    with pytest.raises(ValueError, match="moved"):
        p._move()
    with pytest.raises(ValueError, match="moved"):
        p.first = 5
    assert testing.echo(token).first == 1
    with pytest.raises(ValueError, match="already passed"):
        testing.echo(token)
    assert "moved" in repr(p)


def test_T36_bad_modules(tmp_path):
    with pytest.raises(tether_ffi.ValueError, match="no such file"):
        tether_ffi.load_module(tmp_path / "missing.so")
    text = tmp_path / "not_a_library.so"
    text.write_text("just text")
    with pytest.raises(tether_ffi.ValueError, match="not a loadable shared library"):
        tether_ffi.load_module(text)
    # A real shared library that is not a tether module: this extension itself.
    with pytest.raises(tether_ffi.ValueError, match="not a tether module"):
        tether_ffi.load_module(tether_ffi._native.__file__)
    with pytest.raises(tether_ffi.RuntimeError, match="ABI"):
        tether_ffi.load_module(bad_abi_plugin_path())


def test_T37_process_keeps_working(testing, baseline, tmp_path):
    faults = [
        lambda: testing.add(1, "x"),
        lambda: testing.add(1),
        lambda: testing.panic("again"),
        lambda: testing.call(lambda: 1 / 0),
        lambda: testing.raise_error("KeyError", "k"),
        lambda: tether_ffi.load_module(tmp_path / "nothing.so"),
        lambda: testing.add(1, object()),
        lambda: testing.echo(2**70),
        lambda: testing.take("never stashed"),
    ]
    for fault in faults:
        with pytest.raises(Exception):
            fault()
    assert testing.add(2, 3) == 5
    assert live_now() == baseline


# ---- shutdown ------------------------------------------------------------------------------

SHUTDOWN_SCRIPT = r"""
import gc, threading
import tether_ffi
T = tether_ffi.testing
keep = [T.Pair(i, T.Pair(i, None)) for i in range(100)]      # live tied objects
arr = T.make_array(50)
items = list(arr)
class Sub(T.Pair): pass                                          # instances in blocks of their own
T.stash("a", Sub(1, 2))                                          # stashed, wrapper gone (cached)
T.stash("b", keep[0])                                            # stashed, wrapper alive
T.stash("f", lambda: 1)                                          # a stashed Python callable
T.stash("c", Sub(3, 4))
gc.collect()
T.call_in_thread(tether_ffi.get_global_func("testing.stash_clear"))  # queued foreign frees
print("pending", tether_ffi._native.pending_releases(), flush=True)
def churn():                                                     # still calling at exit
    while True:
        T.make_pair(1, T.Pair(2, 3))
threading.Thread(target=churn, daemon=True).start()
threading.Thread(target=lambda: T.call_in_thread(lambda: [T.Pair(0, 0) for _ in range(10**6)]), daemon=True).start()
"""


def nested(depth, leaf):
    """`leaf` inside `depth` lists."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def array_depth(value):
    """How many Arrays are nested in `value` along its first items."""
    depth = 0
    while isinstance(value, tether_ffi.Array):
        depth, value = depth + 1, value[0]
    return depth


def test_T38_cyclic_and_deep_containers(testing, baseline):
    limit = tether_ffi.MAX_NESTING_DEPTH
    assert limit == 100
    selfish = []
    selfish.append(selfish)
    through_dict = {"items": []}
    through_dict["items"].append(through_dict)
    in_tuple = ([],)
    in_tuple[0].append(in_tuple)
    for cyclic in [selfish, through_dict, in_tuple, [1, [2, selfish]]]:
        with pytest.raises(tether_ffi.ValueError, match=f"contains itself.*at most {limit} levels"):
            testing.echo(cyclic)
    for too_deep in [nested(100_000, 1), nested(limit + 1, 1), nested(limit, {"k": [1]})]:
        with pytest.raises(tether_ffi.ValueError, match=f"more than {limit} levels deep"):
            testing.echo(too_deep)
    # A cycle inside a callback's result and inside a field value is refused the same way.
    with pytest.raises(tether_ffi.ValueError, match="contains itself"):
        testing.call(lambda: selfish)
    with pytest.raises(tether_ffi.ValueError, match="contains itself"):
        testing.Pair(selfish, 1)
    # The same container twice side by side is no cycle; exactly `limit` levels convert.
    shared = [1, 2]
    assert list(testing.echo([shared, shared])[1]) == [1, 2]
    assert array_depth(testing.echo(nested(limit - 1, [7]))) == limit
    assert testing.add(2, 3) == 5
    del selfish, through_dict, in_tuple
    gc.collect()
    assert live_now() == baseline


def test_T39_huge_and_odd_values(testing, baseline):
    big = bytes(100 * 1024 * 1024)
    assert testing.echo(big) == big
    del big
    many = list(range(10_000_000))
    assert len(testing.echo(many)) == 10_000_000
    del many
    with pytest.raises(OverflowError, match="64-bit"):
        testing.echo(2**200)
    import math
    assert math.isnan(testing.echo(float("nan")))
    zero = testing.echo(-0.0)
    assert zero == 0.0 and math.copysign(1.0, zero) == -1.0
    assert testing.echo(float("inf")) == float("inf")
    with pytest.raises(UnicodeEncodeError, match="surrogate"):
        testing.echo("lone \ud800 surrogate")
    assert testing.echo("\U0001F600" * 1000) == "\U0001F600" * 1000
    with pytest.raises(tether_ffi.ValueError, match="between 0 and"):
        testing.make_array(1 << 40)  # no attempt to allocate 2^40 objects
    assert testing.add(2, 3) == 5
    gc.collect()
    assert live_now() == baseline


def test_T40_shutdown_with_live_objects():
    # CPython stops the script's daemon threads where they are: what they hold at that moment (a
    # Pair being made, a thread's start-up block) is never freed, by design, so LeakSanitizer
    # (`cargo xtask harden`'s AddressSanitizer run) does not check this process's exit.
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    proc = subprocess.run([sys.executable, "-c", SHUTDOWN_SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    pending = int(proc.stdout.split()[1])
    assert pending >= 2, proc.stdout  # the cached blocks of "a" and "c" were queued


# A native thread calls a stored callback while the interpreter finalizes: `call_in_background`
# calls 300 ms after the script ends, while a __del__ run by the module teardown (after
# finalization began) holds the interpreter alive for 2 s with the GIL released.
CALLBACK_AT_SHUTDOWN_SCRIPT = r"""
import time
import tether_ffi
T = tether_ffi.testing
class Slow:
    def __del__(self, sleep=time.sleep):  # module globals may be gone by then
        sleep(2)
slow = Slow()
T.call_in_background(int, 1, 300)  # a builtin: a lambda would keep this module's globals alive
print("script done", flush=True)
"""


def test_T41_a_callback_into_a_finalizing_interpreter_is_a_clear_error():
    # No native backtrace: symbolizing one takes longer than the 2 s the interpreter waits.
    env = dict(os.environ, RUST_LIB_BACKTRACE="0")
    proc = subprocess.run(
        [sys.executable, "-c", CALLBACK_AT_SHUTDOWN_SCRIPT], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "script done\n"
    assert (
        "testing.call_in_background: stopped after 0 calls: RuntimeError: the Python interpreter is shutting down"
        in proc.stderr
    ), proc.stderr


def test_T42_an_allocation_failure_is_a_memory_error(testing, baseline):
    def fails(call, pending=1):
        assert testing.fail_allocations(pending) == 0
        with pytest.raises(tether_ffi.MemoryError) as info:
            call()
        assert isinstance(info.value, builtins.MemoryError) and info.value.kind == "MemoryError"
        assert "out of memory" in str(info.value)
        return testing.fail_allocations(0)  # what the failure left pending

    assert fails(lambda: testing.make_pair(1, 2)) == 0  # the native function's object
    assert fails(lambda: testing.Pair(1, 2)) == 0  # a constructor
    assert fails(lambda: testing.echo([1, 2, 3])) == 0  # a list converted to an Array
    assert fails(lambda: testing.echo(["a string longer than seven bytes"])) == 0  # its item's copy
    assert fails(lambda: testing.echo({"key": 1})) == 0  # a dict converted to a Map
    assert fails(lambda: testing.call(lambda: [1, 2])) == 0  # a callback's result
    callback = lambda: 1  # noqa: E731
    refs = sys.getrefcount(callback)
    testing.fail_allocations(1)
    # A callable argument is lent a reused Function (nothing to allocate); one the callee keeps
    # is registered, and the spare that replaces it, when it cannot be made, is made later.
    assert testing.call(callback) == 1
    testing.stash("T42", callback)
    testing.fail_allocations(0)
    assert testing.take("T42") is callback
    testing.add(1, 1)  # the next entry releases what the dropped Function queued
    assert sys.getrefcount(callback) == refs, "no reference to the callable is left behind"
    assert fails(lambda: testing.make_array(3), pending=2) == 1  # two armed: the first one raised
    # Each armed failure is one MemoryError; then calls work again.
    testing.fail_allocations(3)
    for _ in range(3):
        with pytest.raises(MemoryError):
            testing.make_pair(1, 2)
    assert testing.make_pair(1, 2).first == 1
    assert list(testing.call(lambda: [1, 2])) == [1, 2]
    with pytest.raises(tether_ffi.ValueError, match="argument 'n' must not be negative"):
        testing.fail_allocations(-1)
    assert live_now() == baseline


# ---- modules -------------------------------------------------------------------------------

def test_T50_load_plugin(testing):
    mod = tether_ffi.load_module(plugin_path())
    assert tether_ffi.load_module(plugin_path()) is mod, "the same file loads as the same module"
    via_other_path = pathlib.Path(plugin_path()).parent / ".." / pathlib.Path(plugin_path()).parent.name / pathlib.Path(plugin_path()).name
    assert tether_ffi.load_module(via_other_path) is mod, "another path to the same file"
    assert pathlib.Path(mod.__file__).exists()
    assert mod.greet("tether") == "hello, tether"
    c = mod.make_counter(5)
    assert type(c) is mod.Counter
    assert c.count == 5
    assert c.increment() == 6 and c.count == 6
    assert testing.echo(c) is c
    d = mod.Counter(1)
    assert d.count == 1
    with pytest.raises(AttributeError):
        d.count = 3  # read-only field
    again = tether_ffi.load_module(plugin_path())
    assert again.make_counter is mod.make_counter


def test_T51_init_that_panics_or_fails(testing):
    panics = plugin_file("tether_test_plugin_init_panics")
    with pytest.raises(tether_ffi.RustPanic) as info:
        tether_ffi.load_module(panics)
    assert "initialising module" in str(info.value) and "libtether_test_plugin_init_panics" in str(info.value)
    assert "the plugin panicked: init_panics: refusing to start" in str(info.value)
    fails = plugin_file("tether_c_init_fails")
    with pytest.raises(tether_ffi.RuntimeError, match="cplugin init refused to start"):
        tether_ffi.load_module(fails)
    del info
    base = live_now()
    # Init runs once per file: loading again gives the same error, remembered.
    with pytest.raises(tether_ffi.RustPanic, match="remembered"):
        tether_ffi.load_module(panics)
    with pytest.raises(tether_ffi.RuntimeError, match="refused to start.*remembered"):
        tether_ffi.load_module(fails)
    # What the failed init registered is plugin code, still mapped and callable.
    assert tether_ffi.get_global_func("init_fails.leftover")() == 7
    assert testing.add(2, 3) == 5
    assert live_now() == base


def test_T52_existing_type_key_with_another_layout(testing, baseline):
    with pytest.raises(tether_ffi.ValueError) as info:
        tether_ffi.load_module(plugin_file("tether_test_plugin_conflict"))
    message = str(info.value)
    assert 'type key "testing.Pair" is already registered with fields ["first", "second"]' in message, message
    assert '["left", "right"]' in message
    del info
    hostile = tether_ffi.load_module(plugin_file("tether_c_hostile"))
    point = hostile.register_type("hostile.Point", "tether.Object", "x,y")  # new: kept by the registry
    base = live_now()
    assert hostile.register_type("hostile.Point", "tether.Object", "x,y") == point, "the same layout again is fine"
    pair = tether_ffi._native.type_index_of("testing.Pair")
    assert hostile.register_type("testing.Pair", "tether.Object", "first,second") == pair
    with pytest.raises(tether_ffi.ValueError, match=r'"hostile.Point" is already registered with fields \["x", "y"\]'):
        hostile.register_type("hostile.Point", "tether.Object", "x")
    with pytest.raises(tether_ffi.ValueError, match='"testing.Triple" is already registered with parent "testing.Pair"'):
        hostile.register_type("testing.Triple", "tether.Object", "first,second,third")
    p = testing.Pair(1, 2)
    assert (p.first, p.second) == (1, 2), "the registered Pair is untouched"
    del p
    assert live_now() == base


@pytest.mark.parametrize("kind", [-1, 9, 63, 100, 1_000_000])
def test_T53_out_of_range_type_index_from_a_c_plugin(testing, kind):
    hostile = tether_ffi.load_module(plugin_file("tether_c_hostile"))
    base = live_now()
    with pytest.raises(tether_ffi.ValueError, match=rf"the result of hostile.bad_result has type index {kind}, which is neither"):
        hostile.bad_result(kind)
    with pytest.raises(tether_ffi.ValueError, match=rf"make_array: item 0 has type index {kind}"):
        hostile.bad_array(kind)
    with pytest.raises(tether_ffi.ValueError, match=rf"call_function: argument 1 has type index {kind}"):
        hostile.bad_call(testing.echo, kind)
    with pytest.raises(tether_ffi.ValueError, match="header says index 3"):
        hostile.bad_header(tether_ffi._native.CONSTANTS["TYPE_ARRAY"])
    assert hostile.ok() == 42
    assert testing.add(2, 3) == 5
    assert live_now() == base


def test_T54_load_module_of_a_directory(testing, tmp_path):
    with pytest.raises(tether_ffi.ValueError, match="it is a directory, not a shared library file"):
        tether_ffi.load_module(tmp_path)
    assert testing.add(1, 1) == 2


def test_T55_bare_name_is_relative_to_the_working_directory(testing, monkeypatch):
    # libc.so.6 is on every library search path, and still no such file here.
    with pytest.raises(tether_ffi.ValueError, match="no such file in the working directory"):
        tether_ffi.load_module("libc.so.6")
    sample = pathlib.Path(plugin_path())
    mod = tether_ffi.load_module(sample)
    monkeypatch.chdir(sample.parent)
    assert tether_ffi.load_module(sample.name) is mod


def test_T56_same_plugin_under_two_paths(testing, tmp_path):
    mod = tether_ffi.load_module(plugin_path())
    link = tmp_path / "libsample_link.so"
    link.symlink_to(plugin_path())
    assert tether_ffi.load_module(link) is mod, "a link to the same file is the same module"
    copy = tmp_path / "libsample_copy.so"
    shutil.copyfile(plugin_path(), copy)
    other = tether_ffi.load_module(copy)
    assert other is not mod, "a copy is another file"
    base = live_now()
    assert other.Counter is mod.Counter, "the same key with the same layout is one type"
    c = other.make_counter(4)
    assert type(c) is mod.Counter and c.count == 4 and c.increment() == 5
    assert testing.echo(c) is c
    assert tether_ffi.load_module(copy) is other
    del c
    assert live_now() == base
