package dev.tether.ffi;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A seeded random generator over the Java frontend's call arguments ({@code cargo xtask harden}):
 * random nested List (ArrayList, LinkedList, immutable, unmodifiable views), Map (HashMap,
 * TreeMap, LinkedHashMap, null and non-String keys), Object[] and its subtypes, Long, Integer,
 * Double (NaN, -0.0, infinities), String (lone surrogates), byte[], null, tether objects, callbacks
 * and unsupported objects (Object, BigInteger, int[], Optional, ...), user collections that misbehave (a Map
 * whose size() lies, a List whose get() throws), with cycles and chains around MAX_NESTING_DEPTH, passed to testing.echo, add, sum, make_map, call, stash/take, make_array and
 * the Pair constructor with random arities.
 *
 * <p>Checked per call: it returns, or throws a {@link TetherError} (every tether exception) or the
 * very exception a callback threw; anything else (a StackOverflowError, a NullPointerException, a
 * ClassCastException, ...) is a finding, one line in the findings file. At the end
 * {@code live_objects()} is back at its baseline. Not a JUnit test: run by harden with the test
 * class path. Arguments: {@code --findings FILE [--seed N] [--runs N | --seconds S]}.
 */
public final class ArgumentFuzzMain {
    /** What the fuzzed callbacks throw: it must come back out of testing.call as itself. */
    static final class Planted extends RuntimeException {
        Planted() {
            super("planted", null, false, false);
        }
    }

    private static final String[] ODD_STRINGS = {
        "", "x", "lone \ud800 surrogate", "\udfff", "\ud83d\ude00".repeat(9), "nul\0inside", "testing.Pair"
    };
    private static final long[] ODD_LONGS = {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 53, (1L << 53) + 1};
    private static final double[] ODD_DOUBLES = {
        Double.NaN, -0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE
    };

    private final Random rng;
    private final List<Object> tetherObjects = new ArrayList<>();

    ArgumentFuzzMain(long seed) {
        rng = new Random(seed);
    }

    static TetherFunction t(String name) {
        return Tether.getGlobalFunc("testing." + name);
    }

    private Object tetherObject() {
        if (tetherObjects.isEmpty()) {
            tetherObjects.add(Tether.construct("testing.Pair", 1L, "two"));
            tetherObjects.add(t("make_array").call(2L));
            tetherObjects.add(t("make_map").call(List.of(1L, "k"), Arrays.asList(null, 2.5)));
            tetherObjects.add(t("echo"));
            Object closed = Tether.construct("testing.Pair", 0L, 0L);
            try {
                ((AutoCloseable) closed).close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            tetherObjects.add(closed); // used again: a clear error (T35)
        }
        return tetherObjects.get(rng.nextInt(tetherObjects.size()));
    }

    private String string() {
        if (rng.nextBoolean()) {
            return ODD_STRINGS[rng.nextInt(ODD_STRINGS.length)];
        }
        char[] cs = new char[rng.nextInt(12)];
        for (int i = 0; i < cs.length; i++) {
            cs[i] = (char) (rng.nextBoolean() ? rng.nextInt(0x80) : rng.nextInt(0x10000));
        }
        return new String(cs);
    }

    private Object unsupported() {
        switch (rng.nextInt(10)) {
            case 0:
                return new Object();
            case 1:
                return BigInteger.TWO.pow(200);
            case 2:
                return new BigDecimal("1.5");
            case 3:
                return new int[] {1, 2};
            case 4:
                return Optional.of(1);
            case 5:
                return new AtomicLong(3);
            case 6:
                return new StringBuilder("sb");
            case 7:
                return Thread.currentThread();
            case 8:
                return (Runnable) () -> {};
            default:
                return new Planted();
        }
    }

    Object value(int depth) {
        int kind = rng.nextInt(depth < 4 ? 25 : 13);
        switch (kind) {
            case 0:
                return null;
            case 1:
                return rng.nextBoolean();
            case 2:
                return rng.nextLong();
            case 3:
                return ODD_LONGS[rng.nextInt(ODD_LONGS.length)];
            case 4:
                return rng.nextInt();
            case 5:
                return rng.nextBoolean() ? rng.nextDouble() * 1e300 : ODD_DOUBLES[rng.nextInt(ODD_DOUBLES.length)];
            case 6:
                return rng.nextBoolean() ? (Object) (float) rng.nextGaussian() : (Object) (short) rng.nextInt();
            case 7:
            case 8:
                return string();
            case 9: {
                byte[] b = new byte[rng.nextInt(4) == 0 ? 1 << 16 : rng.nextInt(16)];
                rng.nextBytes(b);
                return b;
            }
            case 10:
                return tetherObject();
            case 11:
                return unsupported();
            case 12: {
                int how = rng.nextInt(3);
                Object result = value(depth + 1);
                return (TetherCallback) args -> {
                    if (how == 0) {
                        throw new Planted();
                    }
                    return how == 1 ? args.length : result;
                };
            }
            default:
                return container(kind, depth);
        }
    }

    private List<Object> items(int depth) {
        List<Object> items = new ArrayList<>();
        for (int i = rng.nextInt(5); i > 0; i--) {
            items.add(value(depth + 1));
        }
        return items;
    }

    private Object container(int kind, int depth) {
        List<Object> items = items(depth);
        switch (kind) {
            case 13:
                return items;
            case 14:
                return new LinkedList<>(items);
            case 15:
                return items.contains(null) ? Collections.unmodifiableList(items) : List.copyOf(items);
            case 16:
                return items.toArray();
            case 17:
                return items.stream().map(v -> v == null ? "null" : v.getClass().getSimpleName()).toArray(String[]::new); // an Object[] subtype
            case 18: {
                Map<Object, Object> m = rng.nextBoolean() ? new HashMap<>() : new LinkedHashMap<>();
                for (Object v : items) {
                    m.put(rng.nextInt(4) == 0 ? value(99) : string(), v); // keys: leaves (a cyclic key has no hashCode)
                }
                return m;
            }
            case 19: {
                Map<Object, Object> m = new TreeMap<>();
                for (Object v : items) {
                    m.put(string(), v);
                }
                return m;
            }
            case 20: { // a List, Map or array that contains itself
                switch (rng.nextInt(4)) {
                    case 0:
                        items.add(items);
                        return items;
                    case 1: {
                        Map<String, Object> m = new HashMap<>();
                        m.put("self", items);
                        items.add(m);
                        return m;
                    }
                    case 2: {
                        Object[] a = new Object[items.size() + 1];
                        a[items.size()] = a;
                        return a;
                    }
                    default:
                        items.add(items);
                        return List.of(1L, items);
                }
            }
            case 21: { // a chain around the limit
                int[] levels = {Tether.MAX_NESTING_DEPTH - 1, Tether.MAX_NESTING_DEPTH, Tether.MAX_NESTING_DEPTH + 1, 5000};
                Object v = items;
                for (int i = levels[rng.nextInt(levels.length)]; i > 0; i--) {
                    int how = rng.nextInt(3);
                    v = how == 0 ? List.of(v) : how == 1 ? Map.of("k", v) : new Object[] {v};
                }
                return v;
            }
            case 22: // the same container side by side (no cycle)
                return Arrays.asList(items, items, new Object[] {items});
            case 23:
                return hostile(items);
            default:
                return Arrays.asList((Object) null, null); // nulls in a List
        }
    }

    /** User collections that misbehave: a Map whose size() lies, a List whose get() or iterator throws. */
    private Object hostile(List<Object> items) {
        int lie = rng.nextInt(4) == 0 ? Integer.MAX_VALUE - items.size() : rng.nextInt(3) - 1;
        switch (rng.nextInt(3)) {
            case 0: {
                Map<Object, Object> real = new LinkedHashMap<>();
                for (Object v : items) {
                    real.put(string(), v);
                }
                return new java.util.AbstractMap<Object, Object>() {
                    @Override
                    public java.util.Set<Map.Entry<Object, Object>> entrySet() {
                        return real.entrySet();
                    }

                    @Override
                    public int size() {
                        return real.size() + lie; // one more, one fewer, the truth or billions
                    }
                };
            }
            case 1:
                return new java.util.AbstractList<Object>() {
                    @Override
                    public Object get(int i) {
                        throw new Planted();
                    }

                    @Override
                    public int size() {
                        return items.size() + 1;
                    }
                };
            default:
                return new java.util.AbstractList<Object>() {
                    @Override
                    public Object get(int i) {
                        return i < items.size() ? items.get(i) : null;
                    }

                    @Override
                    public int size() {
                        // One more or one fewer (a List claiming billions fails in its own toArray()).
                        return Math.max(0, items.size() + Integer.signum(lie));
                    }
                };
        }
    }

    /** One call's target and arguments, made before the call (a generator failure is no finding). */
    final class Input {
        final int which = rng.nextInt(10);
        final List<Object> args = items(0);
        final int how = rng.nextInt(2);
        final boolean flip = rng.nextBoolean();
        final boolean flip2 = rng.nextBoolean();
        final String key = string();
        final Object stashKey = rng.nextInt(4) == 0 && !args.isEmpty() ? args.get(0) : "k";
    }

    Object call(Input in) {
        List<Object> args = in.args;
        Object a0 = args.isEmpty() ? null : args.get(0);
        switch (in.which) {
            case 0:
                return t("echo").call(a0);
            case 1:
                return t("echo").call(args.toArray());
            case 2:
                return t("add").call(args.size() < 2 ? new Object[] {a0, 2L} : args.toArray());
            case 3:
                return t("sum").call(a0);
            case 4:
                return t("make_map").call(args.toArray());
            case 5: {
                List<Object> withCb = new ArrayList<>(args);
                int how = in.how;
                withCb.add(0, (TetherCallback) cbArgs -> {
                    if (how == 0) {
                        throw new Planted();
                    }
                    return cbArgs.length > 0 ? cbArgs[0] : null;
                });
                return t("call").call(withCb.toArray());
            }
            case 6: {
                t("stash").call(in.stashKey, args.size() > 1 ? args.get(1) : null);
                return t("take").call("k");
            }
            case 7:
                return t("make_array").call(in.flip ? a0 : (Object) (in.flip2 ? -1L : 1L << 40));
            case 8:
                return Tether.construct("testing.Pair", args.toArray());
            default:
                return Tether.construct(in.flip ? "testing.Triple" : in.key, args.toArray());
        }
    }

    public static void main(String[] argv) throws Exception {
        Path findings = null;
        long seed = 1;
        long runs = 0;
        long seconds = 0;
        for (int i = 0; i < argv.length; i += 2) {
            switch (argv[i]) {
                case "--findings":
                    findings = Path.of(argv[i + 1]);
                    break;
                case "--seed":
                    seed = Long.parseLong(argv[i + 1]);
                    break;
                case "--runs":
                    runs = Long.parseLong(argv[i + 1]);
                    break;
                case "--seconds":
                    seconds = Long.parseLong(argv[i + 1]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + argv[i]);
            }
        }
        if (findings == null) {
            throw new IllegalArgumentException("--findings FILE is required");
        }
        ArgumentFuzzMain fuzz = new ArgumentFuzzMain(seed);
        // Warm up (the first use of a namespace function or class ties it for good), then the baseline.
        for (int i = 0; i < 500; i++) {
            fuzz.oneQuietly();
        }
        t("stash_clear").call();
        long baseline = TestSupport.settledLive();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        long executions = 0;
        long found = 0;
        long started = System.nanoTime();
        while (runs > 0 ? executions < runs : System.nanoTime() < deadline) {
            executions++;
            Throwable failure = fuzz.one();
            if (failure != null) {
                found++;
                StringWriter trace = new StringWriter();
                failure.printStackTrace(new PrintWriter(trace));
                String what = "untyped " + failure.getClass().getName() + ": " + String.valueOf(failure.getMessage());
                record(findings, what.substring(0, Math.min(what.length(), 300)), trace.toString());
            }
        }
        t("stash_clear").call();
        fuzz.tetherObjects.clear();
        long live = TestSupport.settledLive();
        for (int i = 0; i < 200 && live != baseline; i++) {
            System.gc();
            Thread.sleep(20);
            live = (Long) t("live_objects").call();
        }
        if (live > baseline) {
            found++;
            record(findings, "live_objects() " + live + " at the end, baseline " + baseline, "seed " + seed);
        }
        System.out.println("stat::number_of_executed_units: " + executions);
        System.out.println("findings: " + found + ", " + (System.nanoTime() - started) / 1_000_000 + " ms");
        System.exit(0);
    }

    private void oneQuietly() {
        try {
            call(new Input());
        } catch (RuntimeException | StackOverflowError e) {
            // only what the calls leave behind matters here
        }
    }

    /** One call; the failure if it is not a typed one. */
    Throwable one() {
        Input in;
        try {
            in = new Input();
        } catch (StackOverflowError e) {
            return null; // the generator's own recursion, not a call
        }
        try {
            call(in);
            return null;
        } catch (Planted e) {
            return null;
        } catch (Throwable e) {
            // A closed wrapper used again is an IllegalStateException, as docs/java.md documents.
            boolean closed = e instanceof IllegalStateException && String.valueOf(e.getMessage()).contains("was closed");
            return e instanceof TetherError || closed ? null : e;
        }
    }

    private static void record(Path file, String what, String detail) throws IOException {
        String line = "{\"what\":" + quote(what) + ",\"detail\":" + quote(detail.substring(0, Math.min(detail.length(), 2000))) + "}\n";
        Files.writeString(file, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    private static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
