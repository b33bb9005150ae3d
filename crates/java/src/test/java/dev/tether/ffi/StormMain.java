package dev.tether.ffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shutdown storm ({@code cargo xtask harden --only storms}): the VM exits while 8 daemon threads
 * are inside native calls with callbacks in flight, Cleaners are pending and a native thread keeps
 * calling a stored callback.
 *
 * <p>Threads 0-5 each make one native call that never returns on its own (native loops calling
 * Java back, callbacks that sleep in native code, native threads attaching to call back, nested
 * calls); thread 6 makes and drops objects and asks for collections (Cleaners pending); thread 7
 * loops over list conversions. A detached native thread ({@code testing.call_in_background})
 * calls a stored callback every millisecond. Once every thread has called back the main thread
 * waits a random few milliseconds, prints {@code storm: 8 threads inside native calls} and ends:
 * by returning ({@code --mode end}, exit code 0) or {@code System.exit(5)} ({@code --mode exit}).
 * The harden part checks the exit code and that nothing crashed or hung.
 *
 * <p>Usage: {@code StormMain --mode end|exit --seed N}
 */
public final class StormMain {
    private StormMain() {}

    private static final long FOREVER = 1_000_000_000_000L;
    private static final int THREADS = 8;

    private static TetherFunction t(String name) {
        return Tether.getGlobalFunc("testing." + name);
    }

    public static void main(String[] args) throws InterruptedException {
        String mode = null;
        long seed = 1;
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--mode")) {
                mode = args[i + 1];
            } else if (args[i].equals("--seed")) {
                seed = Long.parseLong(args[i + 1]);
            }
        }
        if (!"end".equals(mode) && !"exit".equals(mode)) {
            throw new IllegalArgumentException("--mode end|exit");
        }
        Random random = new Random(seed);
        CountDownLatch inside = new CountDownLatch(THREADS);
        AtomicBoolean[] told = new AtomicBoolean[THREADS];
        for (int i = 0; i < THREADS; i++) {
            told[i] = new AtomicBoolean();
        }
        TetherFunction callTimes = t("call_times");
        TetherFunction callInThread = t("call_in_thread");
        TetherFunction makePair = t("make_pair");
        TetherFunction sleep = t("sleep_ms");
        TetherFunction echo = t("echo");
        java.util.function.IntFunction<TetherCallback> pairs = i -> a -> {
            if (!told[i].getAndSet(true)) {
                inside.countDown();
            }
            return makePair.call((long) i, makePair.call((long) i, "a string longer than seven bytes"));
        };
        java.util.function.IntFunction<TetherCallback> sleeps = i -> a -> {
            if (!told[i].getAndSet(true)) {
                inside.countDown();
            }
            return sleep.call(1L);
        };
        List<Runnable> work = new ArrayList<>();
        work.add(() -> callTimes.call(pairs.apply(0), FOREVER)); // a native loop calling back
        work.add(() -> callTimes.call(sleeps.apply(1), FOREVER)); // native -> Java -> native
        work.add(() -> callInThread.call((TetherCallback) a -> callTimes.call(pairs.apply(2), FOREVER)));
        work.add(() -> callInThread.call((TetherCallback) a -> callTimes.call(sleeps.apply(3), FOREVER)));
        work.add(() -> t("call").call((TetherCallback) a -> callTimes.call(pairs.apply(4), FOREVER)));
        work.add(() -> callInThread.call((TetherCallback) a -> callInThread.call(
                (TetherCallback) b -> callTimes.call(pairs.apply(5), FOREVER))));
        work.add(() -> {
            for (int round = 0; ; round++) { // wrappers dropped by the thousand: Cleaners pending
                List<Object> made = new ArrayList<>();
                for (int k = 0; k < 1000; k++) {
                    made.add(makePair.call((long) k, null));
                }
                if (!told[6].getAndSet(true)) {
                    inside.countDown();
                }
                if (round % 10 == 0) {
                    System.gc();
                }
            }
        });
        work.add(() -> callTimes.call((TetherCallback) a -> {
            if (!told[7].getAndSet(true)) {
                inside.countDown();
            }
            return echo.call(List.of(makePair.call(1L, 2L), List.of("a string longer than seven bytes")));
        }, FOREVER));
        for (int i = 0; i < work.size(); i++) {
            Runnable r = work.get(i);
            int index = i;
            Thread thread = new Thread(() -> {
                try {
                    r.run();
                } catch (Throwable e) {
                    // The VM is exiting under it; anything else is worth seeing.
                    System.err.println("storm thread " + index + ": " + e);
                }
            }, "storm-" + i);
            thread.setDaemon(true);
            thread.start();
        }
        t("call_in_background").call((TetherCallback) a -> makePair.call(1L, 2L), FOREVER, 1L);
        if (!inside.await(60, TimeUnit.SECONDS)) {
            System.out.println("finding: the threads never all called back");
            System.exit(2);
        }
        Thread.sleep(random.nextInt(30));
        System.out.println("storm: " + THREADS + " threads inside native calls");
        System.out.flush();
        if (mode.equals("exit")) {
            System.exit(5);
        }
    }
}
