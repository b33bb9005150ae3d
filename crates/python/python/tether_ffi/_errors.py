"""Exceptions raised by native code.

Every native error is a :class:`Error` carrying ``.kind`` (the native kind name) and
``.backtrace`` (the native backtrace, empty unless ``RUST_BACKTRACE``/``RUST_LIB_BACKTRACE``
is set). Each kind is also a subclass of the matching builtin exception, so both
``except tether_ffi.Error`` and ``except TypeError`` work.
"""

from __future__ import annotations

import builtins


class Error(Exception):
    """A native error: ``.kind`` names the native kind, ``.backtrace`` the native frames."""

    kind: str = "RuntimeError"
    backtrace: str = ""


class TypeError(Error, builtins.TypeError):  # noqa: A001 - mirrors the builtin on purpose
    kind = "TypeError"


class ValueError(Error, builtins.ValueError):  # noqa: A001
    kind = "ValueError"


class IndexError(Error, builtins.IndexError):  # noqa: A001
    kind = "IndexError"


class KeyError(Error, builtins.KeyError):  # noqa: A001
    kind = "KeyError"

    def __str__(self) -> str:
        # builtins.KeyError quotes its argument; native messages are already text.
        return str(self.args[0]) if self.args else ""


class AttributeError(Error, builtins.AttributeError):  # noqa: A001
    kind = "AttributeError"


class RuntimeError(Error, builtins.RuntimeError):  # noqa: A001
    kind = "RuntimeError"


class RustPanic(RuntimeError):
    """A Rust panic inside native code (caught at the boundary; the process keeps working)."""

    kind = "RustPanic"


class MemoryError(Error, builtins.MemoryError):  # noqa: A001
    """A native object could not be allocated (the process keeps working)."""

    kind = "MemoryError"


for _cls in (Error, TypeError, ValueError, IndexError, KeyError, AttributeError, RuntimeError, RustPanic, MemoryError):
    _cls.__module__ = "tether_ffi"

KIND_CLASSES: dict[str, type[Error]] = {
    "TypeError": TypeError,
    "ValueError": ValueError,
    "IndexError": IndexError,
    "KeyError": KeyError,
    "AttributeError": AttributeError,
    "RuntimeError": RuntimeError,
    "RustPanic": RustPanic,
    "MemoryError": MemoryError,
}

_BUILTIN_KINDS = (
    (builtins.TypeError, "TypeError"),
    (builtins.ValueError, "ValueError"),
    (builtins.IndexError, "IndexError"),
    (builtins.KeyError, "KeyError"),
    (builtins.AttributeError, "AttributeError"),
    (builtins.MemoryError, "MemoryError"),
)


def _classes_by_code() -> dict[int, type[Error]]:
    from . import _native  # the core's (name, code) table: codes cross the boundary, not names

    return {code: KIND_CLASSES.get(name, RuntimeError) for name, code in _native.ERROR_KINDS}


CODE_CLASSES: dict[int, type[Error]] = _classes_by_code()


def make_error(code: int, kind: str, message: str, backtrace: str) -> Error:
    """The exception instance for a native error: its class chosen by the kind's code (a kind
    named outside the core's list has RuntimeError's code and keeps its name in ``.kind``)."""
    err = CODE_CLASSES.get(code, RuntimeError)(message)
    err.kind = kind
    err.backtrace = backtrace
    return err


def error_kind(exc: BaseException) -> str:
    """The native kind for a Python exception leaving a callback."""
    if isinstance(exc, Error):
        return exc.kind
    for cls, kind in _BUILTIN_KINDS:
        if isinstance(exc, cls):
            return kind
    return "RuntimeError"
