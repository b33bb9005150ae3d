"""Adapts tether_ffi's public Python API to the names the bench uses (testing.echo, ...)."""


def testing():
    import tether_ffi

    return tether_ffi.testing
