"""tether_ffi: one native object, one Python wrapper, for the object's whole life.

``testing.echo(x) is x``, ``p.first is p.first``, ``arr[0] is arr[0]``; a wrapper that dies
while its native object lives comes back at the same ``id()``.
"""

from __future__ import annotations

import atexit as _atexit
import collections.abc as _abc
import os as _os
import reprlib as _reprlib
import types as _types
from typing import Any as _Any, Callable as _Callable, NamedTuple as _NamedTuple, TypeVar as _TypeVar

from . import _native
from ._errors import (
    AttributeError,
    Error,
    IndexError,
    KeyError,
    MemoryError,
    RuntimeError,
    RustPanic,
    TypeError,
    ValueError,
    error_kind as _error_kind,
    make_error as _make_error,
)

__all__ = [
    "Object", "Function", "Array", "Map", "Error", "TypeError", "ValueError", "IndexError",
    "KeyError", "AttributeError", "RuntimeError", "RustPanic", "MemoryError", "get_global_func",
    "list_global_funcs", "register_object", "load_module", "check_bindings", "namespace", "MAX_NESTING_DEPTH",
    "TypeInfo", "FieldInfo", "MethodInfo", "NativeClass",
]

#: The deepest nesting of lists, tuples and dicts converted to native Arrays and Maps; a
#: deeper value, or one that contains itself, raises ValueError before reaching native code.
MAX_NESTING_DEPTH: int = _native.MAX_NESTING_DEPTH

#: The type of every generated class (``type(tether_ffi.Object)``), a subclass of ``type``.
NativeClass = _native.NativeClass
Object = _native.Object
_EXTENSIONS: dict[str, list[type]] = {}
_SKIP = frozenset({"__module__", "__qualname__", "__dict__", "__weakref__", "__doc__", "__slots__"})


def _make_method(func: _Any, name: str, doc: str) -> _Any:
    # A native descriptor: binds like a function, calls the native function directly.
    method = _native.make_method(func)
    _describe_method_type(type(method))
    return method


class _TypeText(str):
    """An annotation written as text ("scene.Node | None"), shown unquoted by inspect."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)


def _signature_of(func: _Any, *, as_class: bool = False) -> _Any:
    """The registry's signature of a native Function (an ``inspect.Signature``, None when it
    has none). ``inspect`` is imported on first use: it costs milliseconds at import."""
    described = _native.function_signature(func)
    if described is None:
        return None
    import inspect as _inspect

    params, result, receiver = described
    P = _inspect.Parameter

    def build(keywords: bool) -> _inspect.Signature:
        out = [
            P(
                name,
                P.POSITIONAL_OR_KEYWORD if keyword and keywords else P.POSITIONAL_ONLY,
                default=default if has_default else P.empty,
                # `self` goes unannotated, as Python writes methods.
                annotation=P.empty if receiver and i == 0 else _TypeText(annotation),
            )
            for i, (name, annotation, has_default, default, keyword) in enumerate(params)
        ]
        return _inspect.Signature(out, return_annotation=P.empty if as_class else _TypeText(result))

    try:
        return build(keywords=True)
    except ValueError:  # an unnamed parameter after a named one: all positional
        return build(keywords=False)


class _ConstructorSignature:
    """A class's ``__signature__``: its constructor's, made on first use (not at class creation)."""

    __slots__ = ("_constructor", "_signature")

    def __init__(self, constructor: _Any) -> None:
        self._constructor = constructor
        self._signature: _Any = self

    def __get__(self, obj: _Any, owner: _Any = None) -> _Any:
        if self._signature is self:
            self._signature = _signature_of(self._constructor, as_class=True)
        return self._signature


_DESCRIBED_METHOD_TYPES: set[type] = set()


def _describe_method_type(tp: type) -> None:
    """Give the native Method descriptor type what inspect and help() read."""
    if tp in _DESCRIBED_METHOD_TYPES:
        return
    _DESCRIBED_METHOD_TYPES.add(tp)
    tp.__signature__ = property(lambda self: _signature_of(self.__func__))
    tp.__doc__ = property(lambda self: _native.function_info(self.__func__)[1] or None)
    _native.set_class_attr(tp, "__name__", property(lambda self: _native.function_info(self.__func__)[0].rsplit(".", 1)[-1]))
    _native.set_class_attr(
        tp, "__qualname__", property(lambda self: ".".join(_native.function_info(self.__func__)[0].rsplit(".", 2)[-2:]))
    )


class FieldInfo(_NamedTuple):
    """A field of a native type (``cls.__tether_type__.fields``)."""

    name: str
    doc: str
    type_hint: str
    settable: bool


class MethodInfo(_NamedTuple):
    """A method of a native type (``cls.__tether_type__.methods``)."""

    name: str
    doc: str
    is_static: bool


class TypeInfo(_NamedTuple):
    """Reflection of a native type: every field and method, inherited ones first."""

    key: str
    doc: str
    fields: tuple[FieldInfo, ...]
    methods: tuple[MethodInfo, ...]
    has_constructor: bool


def _apply_extension(cls: type, ext: type) -> None:
    for name, value in vars(ext).items():
        if name not in _SKIP:
            setattr(cls, name, value)


def _class_hook(cls: type, index: int) -> None:
    """Called by the extension for every new class: methods, field list, extensions."""
    info = _native.type_reflection(index)
    key = info["key"]
    cls.__tether_type__ = TypeInfo(
        key,
        info["doc"],
        tuple(FieldInfo(f["name"], f["doc"], f["type_hint"], f["settable"]) for f in info["fields"]),
        tuple(MethodInfo(m["name"], m["doc"], m["is_static"]) for m in info["methods"]),
        info["has_constructor"],
    )
    cls.__tether_fields__ = tuple(f.name for f in cls.__tether_type__.fields)
    cls.__tether_has_constructor__ = info["has_constructor"]
    if info["constructor"] is not None:
        cls.__signature__ = _ConstructorSignature(info["constructor"])
    for m in info["own_methods"]:
        name, func = m["name"], m["func"]
        setattr(cls, name, staticmethod(func) if m["is_static"] else _make_method(func, name, m["doc"]))
    special = _BUILTIN_EXTRAS.get(index)
    if special is not None:
        special(cls)
    for ext in _EXTENSIONS.get(key, ()):
        _apply_extension(cls, ext)


# ---- the Object base ---------------------------------------------------------------------

def _moved_repr(repr_: _Any) -> _Any:
    """``repr_``, except for a wrapper whose native object was moved out: ``<key (moved)>``."""

    def checked(self: _Any) -> str:
        if _native.is_moved(self):
            cls = type(self)
            return f"<{getattr(cls, '__tether_type_key__', cls.__name__)} (moved)>"
        return repr_(self)

    return checked


@_moved_repr
@_reprlib.recursive_repr()
def _object_repr(self: _Any) -> str:
    cls = type(self)
    key = getattr(cls, "__tether_type_key__", cls.__name__)
    fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in getattr(cls, "__tether_fields__", ()))
    return f"{key}({fields})"


def _rebuild(type_key: str, values: tuple) -> _Any:
    # What `_object_reduce` writes: a str key and a tuple of fields. Anything else did not come
    # from a pickle of ours (a list subclass whose __len__ lies would be unpacked below).
    if type(type_key) is not str:
        raise TypeError(f"cannot unpickle: the type key must be a str, not {type(type_key).__name__}")
    if type(values) is not tuple:
        raise TypeError(f"cannot unpickle {type_key}: its fields must be a tuple, not {type(values).__name__}")
    index = _native.type_index_of(type_key)
    if index is None:
        raise ValueError(f"cannot unpickle {type_key}: no such native type is registered")
    return _native.class_for_index(index)(*values)


def _object_reduce(self: _Any) -> tuple:
    cls = type(self)
    key = cls.__tether_type_key__
    if not getattr(cls, "__tether_has_constructor__", False):
        raise TypeError(f"cannot pickle {key} objects: the type has no registered constructor")
    return (_rebuild, (key, tuple(getattr(self, n) for n in cls.__tether_fields__)))


def _same_as(self: _Any, other: _Any) -> bool:
    """Do ``self`` and ``other`` wrap the same native object?"""
    return _native.same_as(self, other)


def _move(self: _Any) -> _Any:
    """Hand this object's native reference to the next call it is passed to.

    The wrapper is released at once and can no longer be used (that raises ValueError).
    """
    return _native.move_out(self)


Object.__repr__ = _object_repr
Object.__reduce__ = _object_reduce
Object.same_as = _same_as
Object._move = _move
Object.__tether_fields__ = ()
Object.__tether_type_key__ = "tether.Object"


# ---- builtin classes: Function, Array, Map --------------------------------------------------

def _function_extras(cls: type) -> None:
    def name(self: _Any) -> str:
        return _native.function_info(self)[0]

    def doc(self: _Any) -> str | None:
        # The signature first, as pybind11 and nanobind write it: what help() shows of a
        # callable that is not a Python function.
        name, text = _native.function_info(self)[:2]
        signature = _signature_of(self)
        if signature is None:
            return text or None
        head = f"{name.rsplit('.', 1)[-1]}{signature}"
        return f"{head}\n\n{text}" if text else head

    def repr_(self: _Any) -> str:
        return f"<tether_ffi.Function {_native.function_info(self)[0]}>"

    def reduce(self: _Any) -> tuple:
        fname = _native.function_info(self)[0]
        if fname in _native.list_global_funcs():
            return (get_global_func, (fname,))
        raise TypeError(f"cannot pickle function {fname!r}: it is not a registered global function")

    cls.__doc__ = property(doc)  # per-instance docstring from the registry
    cls.__signature__ = property(_signature_of)  # inspect.signature() and help()
    cls.__repr__ = _moved_repr(repr_)
    cls.__reduce__ = reduce
    # Instances answer __name__ from the registry; the class keeps its own (type's getset wins).
    _native.set_class_attr(cls, "__name__", property(name))


def _array_extras(cls: type) -> None:
    def new(klass: type, items: _Any = ()) -> _Any:
        return _native.make_array(items)

    def getitem(self: _Any, i: _Any) -> _Any:
        if isinstance(i, slice):
            return _native.array_items(self)[i]
        return _native.array_get(self, i.__index__())

    def repr_(self: _Any) -> str:
        return f"Array({_native.array_items(self)!r})"

    cls.__new__ = staticmethod(new)
    cls.__len__ = lambda self: _native.array_len(self)
    cls.__getitem__ = getitem
    cls.__iter__ = lambda self: iter(_native.array_items(self))
    for name in ("__contains__", "__reversed__", "index", "count"):
        setattr(cls, name, getattr(_abc.Sequence, name))
    cls.__repr__ = _moved_repr(_reprlib.recursive_repr()(repr_))
    cls.__reduce__ = lambda self: (Array, (_native.array_items(self),))
    _abc.Sequence.register(cls)


def _map_extras(cls: type) -> None:
    def new(klass: type, mapping: _Any = ()) -> _Any:
        return _native.make_map(mapping)

    def repr_(self: _Any) -> str:
        return "Map({" + ", ".join(f"{k!r}: {v!r}" for k, v in _native.map_items(self)) + "})"

    cls.__new__ = staticmethod(new)
    cls.__len__ = lambda self: _native.map_len(self)
    cls.__getitem__ = lambda self, key: _native.map_get(self, key)
    cls.__contains__ = lambda self, key: _native.map_contains(self, key)
    cls.__iter__ = lambda self: iter([k for k, _ in _native.map_items(self)])
    cls.items = lambda self: _native.map_items(self)
    cls.keys = lambda self: [k for k, _ in _native.map_items(self)]
    cls.values = lambda self: [v for _, v in _native.map_items(self)]
    cls.get = _abc.Mapping.get
    cls.__repr__ = _moved_repr(_reprlib.recursive_repr()(repr_))
    cls.__reduce__ = lambda self: (Map, (dict(_native.map_items(self)),))
    _abc.Mapping.register(cls)


_INDICES = dict(_native.builtin_indices())
_BUILTIN_EXTRAS = {
    _INDICES["Function"]: _function_extras,
    _INDICES["Array"]: _array_extras,
    _INDICES["Map"]: _map_extras,
}

_native.set_hooks(_class_hook, _make_error, _error_kind)
_atexit.register(_native.mark_finalizing)

Function = _native.class_for_index(_INDICES["Function"])
Array = _native.class_for_index(_INDICES["Array"])
Map = _native.class_for_index(_INDICES["Map"])


# ---- the public API ----------------------------------------------------------------------

def get_global_func(name: str) -> _Any:
    """The native function registered under ``name`` (ValueError if there is none)."""
    return _native.get_global_func(name)


def list_global_funcs() -> list[str]:
    """Every registered global function name, sorted."""
    return _native.list_global_funcs()


_T = _TypeVar("_T", bound=type)


def register_object(type_key: str) -> _Callable[[_T], _T]:
    """Class decorator: add the decorated class's Python methods to the generated class of
    native type ``type_key`` and return that generated class."""

    def decorate(pycls: _T) -> _T:
        index = _native.type_index_of(type_key)
        if index is None:
            raise ValueError(f"no native type is registered as {type_key!r}")
        _EXTENSIONS.setdefault(type_key, []).append(pycls)
        cls = _native.class_for_index(index)
        _apply_extension(cls, pycls)
        return cls  # type: ignore[return-value]

    return decorate


def _module_from(name: str, functions: list[tuple[str, _Any]], type_indices: list[int]) -> _types.ModuleType:
    mod = _types.ModuleType(name)
    for fname, func in functions:
        setattr(mod, fname, func)
    for index in type_indices:
        cls = _native.class_for_index(index)
        setattr(mod, cls.__name__, cls)
    return mod


_LOADED: dict[str, _types.ModuleType] = {}


def load_module(path: str | _os.PathLike[str]) -> _types.ModuleType:
    """Load a tether plugin; its functions and types become the module's attributes.

    ``path`` is a file path, never a library name: a relative one, a bare file name too, is
    relative to the working directory; the library search path is not consulted. Loading the
    same file again, under any path to it, returns the same module object; a copy of the file
    is another module. See docs/python.md, "Loading plugins".
    """
    real, functions, type_indices = _native.load_module(_os.fspath(path))
    mod = _LOADED.get(real)
    if mod is None:
        stem = _os.path.basename(real).split(".")[0]
        stem = stem[3:] if stem.startswith("lib") else stem
        mod = _module_from(stem, functions, type_indices)
        mod.__file__ = real
        _LOADED[real] = mod
    return mod


def check_bindings(module: _types.ModuleType, manifest: _abc.Iterable[tuple[str, str]]) -> None:
    """Check that bindings generated by ``tether-bindgen`` match the loaded plugin ``module``.

    ``manifest`` is the ``(item, hash)`` list the generated package recorded. Raises
    ``tether_ffi.ValueError`` naming every item that was added, removed or changed since the
    bindings were generated (stale bindings: regenerate them). See docs/bindings.md.
    """
    _native.check_bindings(module.__file__, [(str(item), str(h)) for item, h in manifest])


def namespace(prefix: str) -> _types.ModuleType:
    """The global functions and types whose names start with ``prefix + '.'`` as a module
    (``namespace("testing").echo``)."""
    dot = prefix + "."
    functions = [(n[len(dot):], get_global_func(n)) for n in list_global_funcs() if n.startswith(dot)]
    types_ = [i for i, key in _native.list_types() if key.startswith(dot)]
    return _module_from(prefix, functions, types_)


def __getattr__(name: str) -> _Any:
    if name == "testing":
        mod = namespace("testing")
        globals()["testing"] = mod
        return mod
    raise AttributeError(f"module 'tether_ffi' has no attribute {name!r}")
