package dev.tether.bench;

import java.util.function.Supplier;

/** Workloads through the jni 0.22 peer. */
public final class JniWorkloads implements Workloads {
    @Override
    public Object sample() {
        return new Object();
    }

    @Override
    public Object echo(Object x) {
        return JniPeer.echo(x);
    }

    @Override
    public Object makePair(Object first, Object second) {
        return new JniPeer.Pair(first, second);
    }

    @Override
    public Object first(Object pair) {
        return ((JniPeer.Pair) pair).first();
    }

    @Override
    public long add3(long a, long b, long c) {
        return JniPeer.add3(a, b, c);
    }

    @Override
    public Object callback(Object result) {
        Supplier<Object> f = () -> result;
        return f;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(Object cb) {
        return JniPeer.call((Supplier<Object>) cb);
    }
}
