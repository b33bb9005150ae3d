package dev.tether.ffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;

/**
 * Allocation failures ({@code cargo xtask harden --only faults}): rounds of
 * {@code testing.fail_allocations(n, after)} (n from 1 to 4 allocations of the frontend allocator
 * fail once {@code after}, from 0 to 8, have succeeded: the failure lands anywhere in the
 * operation) followed by one operation that allocates: native functions, constructors, argument
 * conversions of Lists, Maps, arrays, strings and byte[], callbacks (from this thread and from a
 * native one), fields, and operations that throw an error of their own.
 *
 * <p>Per round the operation either succeeds, throws a {@link TetherOutOfMemoryError} (an
 * {@link OutOfMemoryError}) or throws the error it throws anyway; anything else is a finding. The
 * failures left unused are cancelled and a plain call must work. At the end
 * {@code testing.live_objects()} must be back at its baseline. Prints {@code figure: KEY = VALUE}
 * lines and one {@code finding: ...} line per finding.
 *
 * <p>Usage: {@code FaultsMain --rounds N --seed S}
 */
public final class FaultsMain {
    private FaultsMain() {}

    private static final String LONG = "a string longer than seven bytes";

    private static TetherFunction t(String name) {
        return Tether.getGlobalFunc("testing." + name);
    }

    private record Operation(String name, Supplier<Object> run, Class<? extends Throwable> allowed) {}

    /** Planted by a callback: must come back out as itself. */
    static final class Planted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Planted() {
            super("planted");
        }
    }

    public static void main(String[] args) throws InterruptedException {
        long rounds = 0;
        long seed = 1;
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--rounds")) {
                rounds = Long.parseLong(args[i + 1]);
            } else if (args[i].equals("--seed")) {
                seed = Long.parseLong(args[i + 1]);
            }
        }
        Random random = new Random(seed);
        TetherFunction makePair = t("make_pair");
        TetherFunction echo = t("echo");
        TetherFunction fail = t("fail_allocations");
        TetherType pairType = Tether.type("testing.Pair");
        List<Operation> operations = List.of(
                new Operation("make_pair", () -> makePair.call(1L, 2L), null),
                new Operation("constructor", () -> Tether.construct("testing.Pair", 1L, makePair.call(2L, LONG)), null),
                new Operation("TetherType.construct (the array-free path)",
                        () -> pairType.construct(1L, makePair.call(2L, LONG)), null),
                new Operation("make_array", () -> new ArrayList<>((TetherList) t("make_array").call(5L)), null),
                new Operation("List argument", () -> echo.call(List.of(1L, LONG, List.of(2L, 3L))), null),
                new Operation("Map argument", () -> echo.call(Map.of("key", List.of(1L), "other", LONG)), null),
                new Operation("Object[] argument", () -> echo.call((Object) new Object[] {LONG, 1L}), null),
                new Operation("byte[] argument", () -> echo.call(new byte[64]), null),
                new Operation("make_map", () -> t("make_map").call(List.of("a", LONG), List.of(1L, List.of(2L))), null),
                new Operation("callback", () -> t("call").call((TetherCallback) a -> List.of(a[0], LONG), 5L), null),
                new Operation("callback on a native thread",
                        () -> t("call_in_thread").call((TetherCallback) a -> Map.of("k", List.of(1L, LONG))), null),
                new Operation("callback from a new Java thread (its first lent Function)",
                        () -> onNewThread(() -> t("call").call((TetherCallback) a -> List.of(1L, LONG))), null),
                new Operation("callback that throws", () -> t("call").call((TetherCallback) a -> {
                    throw new Planted();
                }), Planted.class),
                new Operation("stash and take", () -> {
                    t("stash").call("faults", List.of(1L, LONG));
                    return t("take").call("faults");
                }, TetherKeyError.class),
                new Operation("field set", () -> {
                    TetherInstance p = (TetherInstance) makePair.call(1L, 2L);
                    p.set("first", List.of(1L, LONG));
                    return p.get("first");
                }, null),
                new Operation("wrong argument", () -> t("add").call(1L, "x"), TetherTypeError.class),
                new Operation("raise_error", () -> t("raise_error").call("KeyError", LONG), TetherKeyError.class));
        for (Operation op : operations) { // each once without failures: lazily made objects are made now
            try {
                op.run.get();
            } catch (RuntimeException e) {
                // the ones that throw anyway
            }
        }
        t("stash_clear").call();
        long base = settled(-1);
        List<String> findings = new ArrayList<>();
        long used = 0, memoryErrors = 0, own = 0, completed = 0;
        long[] afters = {0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
        for (long r = 0; r < rounds; r++) {
            Operation op = operations.get(random.nextInt(operations.size()));
            long n = 1 + random.nextInt(4);
            fail.call(n, afters[random.nextInt(afters.length)]);
            try {
                op.run.get();
                completed++;
            } catch (TetherOutOfMemoryError e) {
                memoryErrors++;
            } catch (Throwable e) {
                if (op.allowed != null && op.allowed.isInstance(e)) {
                    own++;
                } else if (findings.size() < 50) {
                    findings.add(op.name + ": " + e);
                }
            }
            used += n - (Long) fail.call(0L, 0L);
            if (!Long.valueOf(1L).equals(((TetherInstance) makePair.call(1L, 2L)).get("first"))) {
                findings.add(op.name + ": a plain call after the failures gave a wrong result");
            }
        }
        t("stash_clear").call();
        long left = settled(base) - base;
        if (left != 0) {
            findings.add("live_objects() is " + left + " from its baseline after " + rounds + " rounds");
        }
        System.out.println("figure: rounds = " + rounds);
        System.out.println("figure: injected failures = " + used);
        System.out.println("figure: memory errors = " + memoryErrors);
        System.out.println("figure: own errors = " + own);
        System.out.println("figure: completed = " + completed);
        System.out.println("figure: live objects after = " + (left >= 0 ? "+" : "") + left);
        for (String f : findings) {
            System.out.println("finding: " + f);
        }
    }

    /** Runs {@code body} on a new thread and returns its result, or rethrows what it threw. */
    static Object onNewThread(Supplier<Object> body) {
        Object[] out = new Object[1];
        Throwable[] thrown = new Throwable[1];
        Thread thread = new Thread(() -> {
            try {
                out[0] = body.get();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        thread.start();
        try {
            thread.join();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        if (thrown[0] instanceof RuntimeException) {
            throw (RuntimeException) thrown[0];
        }
        if (thrown[0] instanceof Error) {
            throw (Error) thrown[0];
        }
        return out[0];
    }

    /** Collects until live_objects() is {@code target} (or, for -1, stops changing); bounded. */
    static long settled(long target) throws InterruptedException {
        long last = Long.MIN_VALUE;
        int stable = 0;
        for (int i = 0; i < 500; i++) {
            System.gc();
            Thread.sleep(10);
            long now = (Long) t("live_objects").call();
            if (now == target) {
                return now;
            }
            stable = now == last ? stable + 1 : 0;
            if (target == -1 && stable >= 3) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
