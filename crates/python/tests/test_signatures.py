"""Signatures from the registry: inspect.signature, help(), keywords and defaults."""

import inspect
import pydoc

import pytest

import tether_ffi


def test_T60_signatures_are_readable(testing):
    assert str(inspect.signature(testing.add)) == "(a: int, b: int) -> int"
    assert str(inspect.signature(testing.echo)) == "(x: Any) -> Any"
    assert str(inspect.signature(testing.Pair)) == "(first: Any, second: Any)"
    p = testing.Pair(1, 2)
    assert str(inspect.signature(p.swap)) == "() -> testing.Pair", "a bound method leaves self out"
    assert str(inspect.signature(testing.Pair.swap)) == "(self, /) -> testing.Pair"
    params = inspect.signature(testing.make_map).parameters
    assert list(params) == ["keys", "values"]
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params.values())


def test_T61_defaults_fill_what_is_left_out(testing):
    assert testing.greet("ann") == "hello, ann"
    assert testing.greet("ann", "hi") == "hi, ann"
    assert testing.greet("ann", greeting="hey") == "hey, ann"
    assert testing.greet(greeting="yo", name="bo") == "yo, bo"
    sig = inspect.signature(testing.greet)
    assert str(sig) == "(name: str, greeting: str = 'hello') -> str"
    assert sig.parameters["greeting"].default == "hello"
    with pytest.raises(TypeError) as info:
        testing.greet()
    assert str(info.value) == "testing.greet() missing 1 required argument: 'name'"
    with pytest.raises(TypeError) as info:
        testing.greet("a", "b", "c")
    assert str(info.value) == "testing.greet() takes from 1 to 2 positional arguments but 3 were given"


def test_keyword_mistakes_are_named(testing):
    with pytest.raises(tether_ffi.TypeError) as info:
        testing.greet(nmae="x")
    assert str(info.value) == "testing.greet() got an unexpected keyword argument 'nmae'"
    with pytest.raises(tether_ffi.TypeError) as info:
        testing.greet("x", name="y")
    assert str(info.value) == "testing.greet() got multiple values for argument 'name'"
    with pytest.raises(tether_ffi.TypeError) as info:
        testing.greet(name=3)
    assert str(info.value) == "testing.greet() argument 'name' must be str, not int"
    p = testing.Pair(1, 2)
    with pytest.raises(tether_ffi.TypeError) as info:
        p.swap(self=p)
    assert "swap() got" in str(info.value), str(info.value)
    # The process keeps working after every mistake.
    assert testing.greet("z") == "hello, z"


def test_methods_count_what_the_caller_wrote(testing):
    p = testing.Pair(1, 2)
    with pytest.raises(tether_ffi.TypeError) as info:
        p.swap(1)
    assert str(info.value) == "testing.Pair.swap() takes 0 positional arguments but 1 was given"


def test_help_shows_parameters_and_docs(testing):
    text = pydoc.render_doc(testing.Pair, renderer=pydoc.plaintext)
    assert "Pair(first: Any, second: Any)" in text, text
    assert "swap(self, /) -> testing.Pair" in text, text
    assert "A new Pair with the values swapped." in text, text
    text = pydoc.render_doc(testing.greet, renderer=pydoc.plaintext)
    assert "(name: str, greeting: str = 'hello') -> str" in text, text


def test_signatures_survive_many_calls_without_leaking(testing):
    before = testing.live_objects()
    for i in range(2000):
        assert testing.greet(str(i)) == f"hello, {i}"
        assert testing.add(b=i, a=1) == i + 1
    assert testing.live_objects() == before


def test_a_string_python_cannot_encode_names_its_argument(testing):
    with pytest.raises(UnicodeEncodeError) as info:
        testing.greet(name="\ud800")
    assert "testing.greet() argument 'name': surrogates not allowed" in str(info.value), str(info.value)
    assert info.value.object == "\ud800" and info.value.start == 0


def test_hostile_keyword_calls_are_errors_and_the_process_keeps_working(testing):
    with pytest.raises(UnicodeEncodeError):
        testing.greet(**{"\ud800": 1})  # a keyword name with no UTF-8 form
    with pytest.raises(UnicodeEncodeError):
        testing.Pair(**{"\ud800": 1})
    with pytest.raises(TypeError, match="unexpected keyword argument 'k0'"):
        testing.greet("a", **{f"k{i}": i for i in range(10000)})
    with pytest.raises(TypeError, match="but 100000 were given"):
        testing.greet(*range(100000))
    assert testing.greet("still alive") == "hello, still alive"
