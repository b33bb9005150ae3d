package dev.tether.bench;

import java.lang.ref.Cleaner;
import java.util.function.Supplier;

/** The jni 0.22 peer: natives written with {@code EnvUnowned::with_env} (benches/peers/jni). */
public final class JniPeer {
    private JniPeer() {}

    public static native Object echo(Object x);

    public static native long add3(long a, long b, long c);

    public static native Object call(Supplier<Object> f);

    static native long newPair(Object first, Object second);

    static native Object pairFirst(long handle);

    static native Object pairSecond(long handle);

    static native void freePair(long handle);

    private static final Cleaner CLEANER = Cleaner.create();

    /** Two object-typed fields held natively as JNI global references. */
    public static final class Pair {
        private final long handle;

        public Pair(Object first, Object second) {
            long h = newPair(first, second);
            this.handle = h;
            CLEANER.register(this, () -> freePair(h));
        }

        public Object first() {
            return pairFirst(handle);
        }

        public Object second() {
            return pairSecond(handle);
        }
    }
}
