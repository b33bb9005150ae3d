package dev.tether.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/** Helpers shared by the conformance tests. */
final class TestSupport {
    private TestSupport() {}

    static TetherFunction t(String name) {
        return Tether.getGlobalFunc("testing." + name);
    }

    /** A test body run on one thread (its index given); it may throw anything. */
    interface ThreadBody {
        void run(int index) throws Throwable;
    }

    /**
     * Run {@code body} on {@code count} threads at once, join them all, and fail with the first
     * thing any of them threw.
     */
    static void onThreads(int count, ThreadBody body) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int index = i;
            Thread thread = new Thread(() -> {
                try {
                    body.run(index);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertNull(failure.get());
    }

    static long live() {
        return (Long) t("live_objects").call();
    }

    /** Collect until the live-object count stops changing, and return it. */
    static long settledLive() throws InterruptedException {
        long last = Long.MIN_VALUE;
        int stable = 0;
        for (int i = 0; i < 200 && stable < 3; i++) {
            System.gc();
            Thread.sleep(10);
            long now = live();
            stable = now == last ? stable + 1 : 0;
            last = now;
        }
        return last;
    }

    /** Collect (bounded, Cleaner runs asynchronously) until live_objects() is back to {@code baseline}. */
    static void assertBackTo(long baseline) throws InterruptedException {
        long now = live();
        for (int i = 0; i < 500 && now != baseline; i++) {
            System.gc();
            Thread.sleep(20);
            now = live();
        }
        assertEquals(baseline, now, "live_objects() back to its baseline");
    }

    static Path repoRoot() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("crates/core")) && Files.isRegularFile(p.resolve("Cargo.toml"))) {
                return p;
            }
        }
        return dir.resolve("../..").normalize();
    }

    /** A path from a system property, else an environment variable, else target/debug/{file}. */
    static Path configured(String property, String env, String file) {
        String v = System.getProperty(property);
        if (v == null || v.isEmpty()) {
            v = System.getenv(env);
        }
        if (v != null && !v.isEmpty()) {
            return Path.of(v);
        }
        return repoRoot().resolve("target/debug").resolve(file);
    }

    static Path plugin() {
        return configured("tether.test.plugin", "TETHER_TEST_PLUGIN", "libtether_test_plugin.so");
    }

    static Path pluginBadAbi() {
        return configured("tether.test.pluginBadAbi", "TETHER_TEST_PLUGIN_BAD_ABI", "libtether_test_plugin_bad_abi.so");
    }

    /** A test plugin by file stem ({@code tether_c_hostile}): from {@code tether.test.pluginDir} or
     * TETHER_TEST_PLUGIN_DIR (set by {@code cargo xtask test}, which builds them all), else target/debug. */
    static Path testPlugin(String stem) {
        String dir = System.getProperty("tether.test.pluginDir");
        if (dir == null || dir.isEmpty() || dir.startsWith("${")) {
            dir = System.getenv("TETHER_TEST_PLUGIN_DIR");
        }
        Path base = dir == null || dir.isEmpty() ? repoRoot().resolve("target/debug") : Path.of(dir);
        return base.resolve("lib" + stem + ".so");
    }

    static Path nativeLibrary() {
        return configured("tether.library.path", "TETHER_JAVA_LIBRARY", "libtether_java.so");
    }
}
