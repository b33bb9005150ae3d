package dev.tether.ffi;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a main class in a child JVM with this test run's class path. */
final class Subprocess {
    private Subprocess() {}

    /** {@code withLibraryPath}: pass -Dtether.library.path; otherwise the jar resource must load. */
    static ProcessResult runJava(Class<?> main, boolean withLibraryPath, String... args) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        // As the test JVM itself runs (JEP 472: no native-access warning on JDK 24+).
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        if (withLibraryPath) {
            cmd.add("-Dtether.library.path=" + TestSupport.nativeLibrary());
        }
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new ProcessResult(-1, "timed out");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new ProcessResult(p.exitValue(), out);
    }
}
