package dev.tether.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The native library loads from the jar resource with no user flag. */
class LoadingTest {
    /** Prints a value computed by the native library, loaded from the class path resource. */
    public static final class LoadFromResourceMain {
        private LoadFromResourceMain() {}

        public static void main(String[] args) {
            System.out.println("resource-load: " + Tether.getGlobalFunc("testing.add").call(40L, 2L)
                    + " property=" + System.getProperty(Native.LIBRARY_PROPERTY));
        }
    }

    @Test
    void loadsWithoutLibraryProperty() throws Exception {
        assertTrue(LoadingTest.class.getResource("/native/" + Native.platform() + "/libtether_java.so") != null,
                "the build copied libtether_java.so into the class path resources");
        ProcessResult r = Subprocess.runJava(LoadFromResourceMain.class, false);
        assertEquals(0, r.exitCode, r.output);
        assertTrue(r.output.contains("resource-load: 42 property=null"), r.output);
    }
}
