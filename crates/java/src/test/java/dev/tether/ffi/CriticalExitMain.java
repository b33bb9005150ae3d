package dev.tether.ffi;

/**
 * Four threads echo a wrapper in a loop (critical downcalls on JDK 22+), a fifth calls a leaf
 * that breaks its promise in a loop, and the main thread exits the JVM while they run: the
 * exit waits for no downcall and nothing crashes.
 */
public final class CriticalExitMain {
    private CriticalExitMain() {}

    public static void main(String[] args) throws InterruptedException {
        TetherFunction echo = Tether.getGlobalFunc("testing.echo");
        Object pair = Tether.getGlobalFunc("testing.make_pair").call(1L, 2L);
        Tether.getGlobalFunc("testing.stash").call("7", (TetherCallback) a -> "called");
        TetherFunction broken = Tether.getGlobalFunc("testing.call_stashed_as_leaf");
        for (int t = 0; t < 5; t++) {
            boolean breaks = t == 4;
            Thread thread = new Thread(() -> {
                while (true) {
                    if (breaks) {
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
