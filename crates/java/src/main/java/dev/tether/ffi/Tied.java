package dev.tether.ffi;

/**
 * Implemented by every wrapper class: each keeps its handle, word and Cleaner registration in
 * fields of its own ({@link NativeRef} describes them), which {@link ObjectOps} reaches.
 */
interface Tied {}
