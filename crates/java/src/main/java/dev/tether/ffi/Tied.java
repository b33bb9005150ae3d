package dev.tether.ffi;

/** Implemented by every wrapper class: access to its native reference. */
interface Tied {
    NativeRef nativeRef();
}
