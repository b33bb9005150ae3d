"""Shared fixtures: the `testing` namespace, plugin paths and a live-object baseline."""

from __future__ import annotations

import gc
import os
import pathlib
import sys

import pytest

import tether_ffi

REPO = pathlib.Path(__file__).resolve().parents[3]


def _lib(name: str) -> str:
    prefix, suffix = ("", ".dll") if sys.platform == "win32" else ("lib", ".dylib" if sys.platform == "darwin" else ".so")
    return str(REPO / "target" / "debug" / f"{prefix}{name}{suffix}")


def plugin_path() -> str:
    return os.environ.get("TETHER_TEST_PLUGIN") or _lib("tether_test_plugin")


def bad_abi_plugin_path() -> str:
    return os.environ.get("TETHER_TEST_PLUGIN_BAD_ABI") or _lib("tether_test_plugin_bad_abi")


def plugin_file(name: str) -> str:
    """A test plugin by file stem (`tether_test_plugin_conflict`, `tether_c_hostile`): from
    TETHER_TEST_PLUGIN_DIR (set by `cargo xtask test`, which builds them all), else target/debug."""
    directory = os.environ.get("TETHER_TEST_PLUGIN_DIR")
    return os.path.join(directory, f"lib{name}.so") if directory else _lib(name)


@pytest.fixture(scope="session")
def testing():
    return tether_ffi.testing


def live_now() -> int:
    """Native objects alive right now, after Python released what it could."""
    for _ in range(3):
        gc.collect()
    return tether_ffi.testing.live_objects()


@pytest.fixture
def baseline(testing):
    """The live-object count at the start of a test (stash emptied first)."""
    testing.stash_clear()
    return live_now()
