package dev.tether.ffi;

/**
 * Four threads echo a wrapper in a loop (critical downcalls on JDK 22+), a fifth calls a leaf
 * that breaks its promise in a loop, a sixth adds ints through an int entry and a seventh calls
 * a broken int leaf, and the main thread exits the JVM while they run: the exit waits for no
 * downcall and nothing crashes.
 */
public final class CriticalExitMain {
    private CriticalExitMain() {}

    public static void main(String[] args) throws InterruptedException {
        TetherFunction echo = Tether.getGlobalFunc("testing.echo");
        Object pair = Tether.getGlobalFunc("testing.make_pair").call(1L, 2L);
        Tether.getGlobalFunc("testing.stash").call("7", (TetherCallback) a -> "called");
        TetherFunction broken = Tether.getGlobalFunc("testing.call_stashed_as_leaf");
        TetherFunction add3 = Tether.getGlobalFunc("testing.add3");
        Tether.getGlobalFunc("testing.stash").call("8", (TetherCallback) a -> 8L);
        TetherFunction brokenInt = Tether.getGlobalFunc("testing.call_stashed_as_int_leaf");
        for (int t = 0; t < 7; t++) {
            boolean breaks = t == 4;
            boolean adds = t == 5;
            boolean breaksInt = t == 6;
            Thread thread = new Thread(() -> {
                long i = 0;
                while (true) {
                    if (adds) {
                        i++;
                        if (add3.callLong(i, 2, 3) != i + 5) {
                            System.out.println("critical-exit: wrong sum");
                            System.exit(3);
                        }
                    } else if (breaksInt) {
                        try {
                            brokenInt.callLong(8);
                        } catch (RuntimeException refused) {
                            // Refused on JDK 22+ (a typed error); on 17 the callback runs.
                        }
                    } else if (breaks) {
                        try {
                            broken.call(7L);
                        } catch (RuntimeException refused) {
                            // Refused on JDK 22+ (a typed error); on 17 the callback runs.
                        }
                    } else if (echo.call(pair) != pair) {
                        System.out.println("critical-exit: wrong wrapper");
                        System.exit(3);
                    }
                }
            });
            thread.setDaemon(t % 2 == 0);
            thread.start();
        }
        Thread.sleep(200);
        System.out.println("critical-exit: " + Critical.status());
        System.exit(0);
    }
}
