"""The Python peers, each as a namespace of the names the workloads use.

Every loader returns a dict with (a subset of): `echo`, `x` (an object `echo` can return),
`pair` (a pair whose `first` holds `x`), `first_attr` (the field's name), `Pair` (the 2-field
constructor), `add3`, `call`, `cb` (a callback that returns `x`), and `new_obj` (W5: a fresh
two-field object). A loader raises when its peer is not available; the bench reports and skips it.
"""

import os


def pyo3(peers_dir):
    import peer_pyo3 as m

    x = m.Pair(None, None)
    return dict(echo=m.echo, x=x, pair=m.Pair(x, None), first_attr="first", Pair=m.Pair,
                add3=m.add3, call=m.call, cb=lambda: x, new_obj=lambda: m.Pair(None, None))


def nanobind(peers_dir):
    import peer_nanobind as m

    x = m.Pair(None, None)
    return dict(echo=m.echo, x=x, pair=m.Pair(x, None), first_attr="first", Pair=m.Pair,
                add3=m.add3, call=m.call, cb=lambda: x, new_obj=lambda: m.Pair(None, None))


def pybind11(peers_dir):
    import peer_pybind11 as m

    x = m.Pair(None, None)
    return dict(echo=m.echo, x=x, pair=m.Pair(x, None), first_attr="first", Pair=m.Pair,
                add3=m.add3, call=m.call, cb=lambda: x, new_obj=lambda: m.Pair(None, None))


def tvm_ffi(peers_dir):
    import tvm_ffi
    import tvm_ffi.testing as t

    mod = tvm_ffi.load_module(os.path.join(peers_dir, "peer_tvm_ffi.so"))
    x = t.TestObjectBase(v_i64=1)
    # TestObjectPtrHolder: tvm-ffi's registered type with an object-typed field `value`.
    return dict(echo=tvm_ffi.get_global_func("testing.echo"), x=x,
                pair=t.TestObjectPtrHolder(x, None), first_attr="value",
                Pair=t.TestObjectPtrHolder, add3=mod.add3,
                call=tvm_ffi.get_global_func("testing.apply"), cb=lambda: x,
                new_obj=lambda: t.TestIntPair(0, 0))


def tether(peers_dir):
    try:
        import tether_api

        testing = tether_api.testing()
    except Exception as e:  # noqa: BLE001 - any failure means "not built" for the bench
        raise RuntimeError(f"tether python frontend not built ({e})") from e
    x = testing.Pair(None, None)
    return dict(echo=testing.echo, x=x, pair=testing.Pair(x, None), first_attr="first",
                Pair=testing.Pair, add3=testing.add3, call=testing.call, cb=lambda: x,
                new_obj=lambda: testing.Pair(None, None))


# Order = column order in the report.
LOADERS = {"tether": tether, "pyo3": pyo3, "nanobind": nanobind, "pybind11": pybind11,
           "tvm_ffi": tvm_ffi}
