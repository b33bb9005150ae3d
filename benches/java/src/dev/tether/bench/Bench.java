package dev.tether.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;

/**
 * One JVM fork measuring one peer: {@code java dev.tether.bench.Bench PEER OUT.json [--quick]}.
 * Each workload is a warmed loop timed with System.nanoTime; the fork prints and writes the
 * median ns/op of its repeats. cargo xtask bench runs several forks per peer.
 */
public final class Bench {
    private static final int THREADS = Integer.getInteger("bench.threads", 8);

    private final Workloads w;
    private final boolean quick;
    private final List<String> records = new ArrayList<>();
    private final String peer;
    /** Results land here so the JIT cannot drop the measured calls. */
    private static volatile Object sink;

    private Bench(String peer, Workloads w, boolean quick) {
        this.peer = peer;
        this.w = w;
        this.quick = quick;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Bench PEER OUT.json [--quick]");
            System.exit(2);
        }
        String peer = args[0];
        boolean quick = args.length > 2 && args[2].equals("--quick");
        Workloads w = load(peer);
        Bench b = new Bench(peer, w, quick);
        b.runAll();
        String versions = String.format(Locale.ROOT, "{\"java\":\"%s\",\"jvm\":\"%s %s\"}",
                System.getProperty("java.version"), System.getProperty("java.vm.name"),
                System.getProperty("java.vm.version"));
        Files.writeString(Path.of(args[1]), "{\"records\":[" + String.join(",\n", b.records)
                + "],\n\"versions\":" + versions + "}\n");
    }

    private static Workloads load(String peer) throws Exception {
        switch (peer) {
            case "jni":
                System.load(System.getProperty("bench.peer.lib"));
                return new JniWorkloads();
            case "jni_raw":
                System.load(System.getProperty("bench.peer.lib"));
                return new JniRawWorkloads();
            case "tether":
                // Compiled separately against the tether jar (benches/java/tether).
                return (Workloads) Class.forName("dev.tether.bench.TetherWorkloads")
                        .getDeclaredConstructor()
                        .newInstance();
            default:
                throw new IllegalArgumentException("unknown peer " + peer);
        }
    }

    /** A timed body: runs the workload n times, returns elapsed ns. */
    private interface Body {
        long run(int n) throws Exception;
    }

    /** {@code -Dbench.only=W1,W3} measures only those workloads (xtask runs one per JVM). */
    private static final String ONLY = System.getProperty("bench.only", "");

    private boolean wanted(String workload) {
        if (!w.has(workload)) return false;
        if (ONLY.isEmpty()) return true;
        return Arrays.asList(ONLY.split(",")).contains(workload);
    }

    private void runAll() throws Exception {
        Object x = w.sample();
        if (wanted("W1")) measure("W1", n -> loopEcho(x, n));
        if (wanted("W2")) {
            Object pair = w.makePair(x, null);
            measure("W2", n -> loopFirst(pair, x, n));
        }
        if (wanted("W3")) measure("W3", this::loopAdd3);
        if (wanted("W4")) measure("W4", n -> loopConstruct(x, n));
        if (wanted("W6")) measure("W6", n -> threadedEcho(x, n));
        if (wanted("W7")) {
            Object cb = w.callback(x);
            measure("W7", n -> loopCall(cb, x, n));
        }
        if (wanted("W8")) scale(x);
        if (wanted("W5")) bytesPerObject();
        if (wanted("W9")) measure("W9", n -> threadedChurn(x, n));
    }

    /**
     * W9: THREADS threads each run n / THREADS rounds of: construct {@code o = makePair(x, x)},
     * store it in {@code h = makePair(o, null)}, fetch {@code echo(o)}, drop {@code o}, refetch
     * {@code first(h)} twice; every fetch must be the canonical wrapper (a duplicate fails the
     * run). Per round over the whole span, as W6.
     */
    private long threadedChurn(Object x, int n) throws Exception {
        java.util.concurrent.atomic.AtomicReference<String> failure = new java.util.concurrent.atomic.AtomicReference<>();
        long dt = perOpOverThreads(n, rounds -> {
            for (int i = 0; i < rounds; i++) {
                Object o = w.makePair(x, x);
                Object h = w.makePair(o, null);
                if (w.echo(o) != o) failure.compareAndSet(null, "echo(o) is not o");
                o = null;
                if (w.first(h) != w.first(h)) failure.compareAndSet(null, "two fetches gave two wrappers");
            }
        });
        if (failure.get() != null) throw new AssertionError("W9: " + failure.get());
        return dt;
    }

    /**
     * W5: bytes per live two-field object, native plus wrapper: the Java heap in use after a GC
     * plus the process's RSS growth (the fork runs with a pre-touched heap, so RSS grows by
     * native memory only), while 1M fresh objects are alive, divided by their count.
     */
    private void bytesPerObject() throws Exception {
        int count = quick ? 20_000 : 1_000_000;
        for (int i = 0; i < 1000; i++) sink = w.makePair(null, null);
        Object[] keep = new Object[count];
        settle();
        long heap0 = heapUsed(), rss0 = rss();
        for (int i = 0; i < count; i++) keep[i] = w.makePair(null, null);
        settle();
        long heap1 = heapUsed(), rss1 = rss();
        double bytes = ((heap1 - heap0) + (rss1 - rss0)) / (double) count;
        sink = keep;
        System.out.printf(Locale.ROOT, "java W5  %-8s %9.2f bytes/object  (n=%d; heap %.1f + native %.1f)%n",
                peer, bytes, count, (heap1 - heap0) / (double) count, (rss1 - rss0) / (double) count);
        records.add(String.format(Locale.ROOT,
                "{\"lang\":\"java\",\"workload\":\"W5\",\"peer\":\"%s\",\"value\":%.4f,"
                        + "\"unit\":\"bytes/object\",\"n\":%d,\"repeats\":1,\"min\":%.4f,\"max\":%.4f}",
                peer, bytes, count, bytes, bytes));
    }

    private static void settle() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
    }

    private static long heapUsed() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    private static long rss() throws IOException {
        String[] statm = Files.readString(Path.of("/proc/self/statm")).trim().split(" ");
        return Long.parseLong(statm[1]) * 4096;
    }

    /**
     * W8: W1 and W2 over random members of 2^10 and 2^20 live objects (the quick run makes 2^14
     * for the large size): {@code objs[order[i & mask]]}, the same index work for every peer. A
     * peer without a pair type (raw JNI) echoes plain Java objects.
     */
    private void scale(Object x) throws Exception {
        boolean pairs = w.has("W2");
        for (String label : new String[] {"1k", "1M"}) {
            int size = label.equals("1k") ? 1 << 10 : quick ? 1 << 14 : 1 << 20;
            Object[] objs = new Object[size];
            for (int i = 0; i < size; i++) objs[i] = pairs ? w.makePair(x, null) : new Object();
            int[] order = new int[size];
            for (int i = 0; i < size; i++) order[i] = i;
            java.util.Random random = new java.util.Random(7);
            for (int i = size - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            int mask = size - 1;
            measure("W8 echo " + label, n -> {
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    Object o = objs[order[i & mask]];
                    if (w.echo(o) != o) throw new AssertionError("echo(o) is not o");
                }
                return System.nanoTime() - t0;
            });
            if (pairs) {
                measure("W8 field " + label, n -> {
                    long t0 = System.nanoTime();
                    for (int i = 0; i < n; i++) {
                        if (w.first(objs[order[i & mask]]) != x) throw new AssertionError("o.first is not x");
                    }
                    return System.nanoTime() - t0;
                });
            }
        }
    }

    private long loopEcho(Object x, int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            if (w.echo(x) != x) throw new AssertionError("echo(x) is not x");
        }
        return System.nanoTime() - t0;
    }

    private long loopFirst(Object pair, Object x, int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            if (w.first(pair) != x) throw new AssertionError("pair.first is not the stored object");
        }
        return System.nanoTime() - t0;
    }

    private long loopAdd3(int n) {
        long acc = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) acc += w.add3(i, 2, 3);
        long dt = System.nanoTime() - t0;
        sink = acc;
        return dt;
    }

    private long loopConstruct(Object x, int n) {
        Object last = null;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) last = w.makePair(x, x);
        long dt = System.nanoTime() - t0;
        sink = last;
        return dt;
    }

    private long loopCall(Object cb, Object x, int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            if (w.call(cb) != x) throw new AssertionError("call(cb) did not return cb()");
        }
        return System.nanoTime() - t0;
    }

    /** W6: THREADS threads each run n / THREADS echoes (see {@link #perOpOverThreads}). */
    private long threadedEcho(Object x, int n) throws Exception {
        return perOpOverThreads(n, rounds -> loopEcho(x, rounds));
    }

    /**
     * Runs {@code body} on THREADS threads at once, n / THREADS rounds each; returns the wall
     * time from the first thread's start to the last thread's end, scaled back to n rounds
     * (each thread reads the clock itself, so a descheduled main thread cannot distort it).
     */
    private static long perOpOverThreads(int n, java.util.function.IntConsumer body) throws Exception {
        int perThread = Math.max(1, n / THREADS);
        CyclicBarrier start = new CyclicBarrier(THREADS);
        long[] begin = new long[THREADS];
        long[] finish = new long[THREADS];
        Thread[] threads = new Thread[THREADS];
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            threads[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                begin[id] = System.nanoTime();
                body.accept(perThread);
                finish[id] = System.nanoTime();
            });
            threads[t].start();
        }
        for (Thread t : threads) t.join();
        long dt = Arrays.stream(finish).max().getAsLong() - Arrays.stream(begin).min().getAsLong();
        return dt * n / ((long) perThread * THREADS);
    }

    /**
     * The count per repeat of a workload that takes a fixed one, else 0. Construction (W4) runs
     * the same count per repeat for every peer, as the Node harness does: what a repeat pays
     * for collecting objects and their Cleaner registrations grows with the count, so a count
     * calibrated to a time (51k-201k objects, depending on how fast the first try ran) moved
     * one peer's figure 2x between forks (Temurin 25, by hand: tether
     * 302-775 ns, jni 313-703; with 100k for both, tether 320-504, jni 301-356). An untimed full
     * collection before each repeat (Node's way) was tried: every repeat then paid for regrowing
     * the heap G1 had shrunk (~630-830 ns for both peers), which measures the collector, not a
     * construction.
     */
    private int fixedCount(String workload) {
        return workload.equals("W4") ? (quick ? 2_000 : 100_000) : 0;
    }

    /**
     * Calibrates n to ~target ns per repeat (or takes the workload's {@link #fixedCount}), warms
     * up, then takes the median of the repeats.
     */
    private void measure(String workload, Body body) throws Exception {
        long target = quick ? 2_000_000L : 50_000_000L;
        int repeats = quick ? 3 : 15;
        long warmupNs = quick ? 20_000_000L : 1_000_000_000L;
        int n = 1000;
        long warmEnd = System.nanoTime() + warmupNs;
        while (System.nanoTime() < warmEnd) body.run(n);
        int fixed = fixedCount(workload);
        if (fixed > 0) {
            n = fixed;
        } else {
            long dt;
            while ((dt = body.run(n)) < target / 4 && n < (1 << 28)) n *= 2;
            n = (int) Math.max(1, Math.min(1L << 28, n * target / Math.max(dt, 1)));
        }
        double[] perOp = new double[repeats];
        for (int r = 0; r < repeats; r++) {
            perOp[r] = (double) body.run(n) / n;
        }
        Arrays.sort(perOp);
        double median = perOp[repeats / 2];
        System.out.printf(Locale.ROOT, "java %-3s %-8s %9.2f ns/op  (n=%d, %d repeats)%n",
                workload, peer, median, n, repeats);
        records.add(String.format(Locale.ROOT,
                "{\"lang\":\"java\",\"workload\":\"%s\",\"peer\":\"%s\",\"value\":%.4f,"
                        + "\"unit\":\"ns/op\",\"n\":%d,\"repeats\":%d,\"min\":%.4f,\"max\":%.4f}",
                workload, peer, median, n, repeats, perOp[0], perOp[repeats - 1]));
    }
}
