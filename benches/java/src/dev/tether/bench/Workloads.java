package dev.tether.bench;

/**
 * One peer's way of doing each workload. A JVM fork loads exactly one implementation, so every
 * call site in {@link Bench} stays monomorphic and is inlined like hand-written code.
 */
public interface Workloads {
    /** An object the peer can pass to {@link #echo} (W1, W6). */
    Object sample();

    /** W1: return an existing object. */
    Object echo(Object x);

    /** W2 setup: a pair whose first field holds {@code first}; null if the peer has no pair. */
    Object makePair(Object first, Object second);

    /** W2: read the object-typed field. */
    Object first(Object pair);

    /** W3: a call with three ints returning an int. */
    long add3(long a, long b, long c);

    /** W7 setup: a callback in this peer's terms that returns {@code result}. */
    Object callback(Object result);

    /** W7: native code calls {@code cb} (from {@link #callback}) back. */
    Object call(Object cb);

    /** Which workloads this peer can express. */
    default boolean has(String workload) {
        return true;
    }
}
