package dev.tether.ffi;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * T41: a native thread (testing.call_in_background) keeps calling a stored Java callback, from
 * a thread it attached itself, while the VM goes: {@code System.exit(0)} ({@code exit}) or
 * {@code main} returning ({@code return}: the VM waits for its non-daemon threads, so the native
 * thread must be attached as a daemon). The exit code must be 0, with no crash or hang.
 */
public final class CallbackAtExitMain {
    private CallbackAtExitMain() {}

    public static void main(String[] args) throws InterruptedException {
        CountDownLatch called = new CountDownLatch(1);
        TetherCallback cb = a -> {
            called.countDown();
            return Tether.getGlobalFunc("testing.make_pair").call(1L, 2L);
        };
        Tether.getGlobalFunc("testing.call_in_background").call(cb, 1_000_000_000L, 0L);
        if (!called.await(60, TimeUnit.SECONDS)) {
            System.out.println("callback-at-exit: the callback never ran");
            System.exit(2);
        }
        System.out.println("callback-at-exit: exiting after the callback ran");
        if (!(args.length > 0 && args[0].equals("return"))) {
            System.exit(0);
        }
    }
}
