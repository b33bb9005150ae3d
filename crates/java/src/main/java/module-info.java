/**
 * tether's JVM frontend: one canonical Java wrapper per native object (docs/java.md). A named
 * module, so that on JDK 24+ {@code --enable-native-access=dev.tether.ffi} lets it load its JNI
 * library on the module path (JEP 472); from the class path the flag is
 * {@code --enable-native-access=ALL-UNNAMED}.
 */
module dev.tether.ffi {
    exports dev.tether.ffi;

    uses dev.tether.ffi.TetherBindings;
}
