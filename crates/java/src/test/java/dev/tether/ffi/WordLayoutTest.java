package dev.tether.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** NativeRef's word layout is native code's (crates/java/src/tie.rs WORD_*): one source. */
class WordLayoutTest {
    @Test
    void nativeRefsWordLayoutIsNativeCodes() {
        assertEquals(Native.constant("WORD_TYPE_SHIFT"), NativeRef.TYPE_SHIFT);
        assertEquals(Native.constant("WORD_TYPE_MASK"), NativeRef.TYPE_MASK);
        assertEquals(Native.constant("WORD_SPARES"), NativeRef.SPARES);
        assertEquals(Native.constant("WORD_UNTRACKED"), NativeRef.UNTRACKED);
        assertEquals(Native.constant("WORD_GENERATION_SHIFT"), NativeRef.GENERATION_SHIFT);
        assertEquals(Native.constant("KIND_OBJECT"), NativeRef.unboundWord(0) & 0xff, "a word's kind");
    }
}
