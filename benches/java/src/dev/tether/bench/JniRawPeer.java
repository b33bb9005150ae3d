package dev.tether.bench;

import java.util.function.Supplier;

/** The raw JNI peer: natives written against jni-sys only (benches/peers/jni_raw), the floor. */
public final class JniRawPeer {
    private JniRawPeer() {}

    public static native Object echo(Object x);

    public static native long add3(long a, long b, long c);

    public static native Object call(Supplier<Object> f);
}
