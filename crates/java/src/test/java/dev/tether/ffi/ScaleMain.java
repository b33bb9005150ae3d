package dev.tether.ffi;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Scale ({@code cargo xtask harden --only scale}): {@code --objects} live objects made and dropped,
 * then {@code --threads} threads each making and dropping {@code --per-thread} objects at once
 * (every one returned through {@code testing.echo}, which must give back the same wrapper; every
 * 16th handed to another thread, which closes it, the others left to their Cleaners), ending with
 * {@code testing.live_objects()} back at its baseline. Prints {@code figure: KEY = VALUE} lines and
 * one {@code finding: ...} line per finding.
 *
 * <p>Usage: {@code ScaleMain --objects N --threads T --per-thread M}
 */
public final class ScaleMain {
    private ScaleMain() {}

    private static TetherFunction t(String name) {
        return Tether.getGlobalFunc("testing." + name);
    }

    private static String seconds(long nanos) {
        return String.format("%.2f s", nanos / 1e9);
    }

    public static void main(String[] args) throws InterruptedException {
        long objects = 0, perThread = 0;
        int threads = 0;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--objects" -> objects = Long.parseLong(args[i + 1]);
                case "--threads" -> threads = Integer.parseInt(args[i + 1]);
                case "--per-thread" -> perThread = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException(args[i]);
            }
        }
        List<String> findings = new ArrayList<>();
        TetherFunction makePair = t("make_pair");
        TetherFunction echo = t("echo");
        long base = FaultsMain.settled(-1);

        long started = System.nanoTime();
        List<TetherInstance> made = new ArrayList<>((int) objects);
        for (long i = 0; i < objects; i++) {
            made.add((TetherInstance) makePair.call(i, null));
        }
        long madeIn = System.nanoTime() - started;
        long peak = (Long) t("live_objects").call() - base;
        if (peak < objects) {
            findings.add(objects + " objects made but live_objects() grew by " + peak);
        }
        for (long i : new long[] {0, objects / 2, objects - 1}) {
            if (!Long.valueOf(i).equals(made.get((int) i).get("first"))) {
                findings.add("an object's field reads back wrong");
            }
        }
        started = System.nanoTime();
        made = null;
        long afterDrop = FaultsMain.settled(base) - base;
        long droppedIn = System.nanoTime() - started;
        if (afterDrop != 0) {
            findings.add("after dropping every object live_objects() is " + afterDrop + " from its baseline");
        }

        ConcurrentLinkedQueue<TetherInstance> handed = new ConcurrentLinkedQueue<>();
        List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        final long per = perThread;
        started = System.nanoTime();
        List<Thread> storm = new ArrayList<>();
        for (int k = 0; k < threads; k++) {
            final long id = k;
            Thread thread = new Thread(() -> {
                try {
                    for (long i = 0; i < per; i++) {
                        TetherInstance p = (TetherInstance) makePair.call(i, makePair.call(id, null));
                        if (echo.call(p) != p) {
                            errors.add("thread " + id + ": echo returned another wrapper");
                        }
                        if (i % 16 == 0) {
                            handed.add(p);
                            TetherInstance other = handed.poll();
                            if (other != null) {
                                other.close();
                            }
                        }
                    }
                } catch (Throwable e) {
                    errors.add("thread " + id + ": " + e);
                }
            });
            storm.add(thread);
            thread.start();
        }
        for (Thread thread : storm) {
            thread.join();
        }
        long stormIn = System.nanoTime() - started;
        handed.clear();
        findings.addAll(errors.subList(0, Math.min(20, errors.size())));
        long afterStorm = FaultsMain.settled(base) - base;
        if (afterStorm != 0) {
            findings.add("after the storm live_objects() is " + afterStorm + " from its baseline");
        }
        System.out.println("figure: live objects = " + objects);
        System.out.println("figure: made in = " + seconds(madeIn));
        System.out.println("figure: dropped in = " + seconds(droppedIn));
        System.out.println("figure: storm threads = " + threads);
        System.out.println("figure: objects per thread = " + 2 * perThread);
        System.out.println("figure: storm = " + seconds(stormIn));
        System.out.println("figure: live objects after = " + (afterStorm >= 0 ? "+" : "") + afterStorm);
        for (String f : findings) {
            System.out.println("finding: " + f);
        }
    }
}
