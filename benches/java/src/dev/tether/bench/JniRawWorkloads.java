package dev.tether.bench;

import java.util.function.Supplier;

/** Workloads through the raw JNI peer (no pair type: W2 and W4 are not expressed). */
public final class JniRawWorkloads implements Workloads {
    @Override
    public Object sample() {
        return new Object();
    }

    @Override
    public Object echo(Object x) {
        return JniRawPeer.echo(x);
    }

    @Override
    public Object makePair(Object first, Object second) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Object first(Object pair) {
        throw new UnsupportedOperationException();
    }

    @Override
    public long add3(long a, long b, long c) {
        return JniRawPeer.add3(a, b, c);
    }

    @Override
    public Object callback(Object result) {
        Supplier<Object> f = () -> result;
        return f;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(Object cb) {
        return JniRawPeer.call((Supplier<Object>) cb);
    }

    @Override
    public boolean has(String workload) {
        return !workload.equals("W2") && !workload.equals("W4") && !workload.equals("W5") && !workload.equals("W9");
    }
}
