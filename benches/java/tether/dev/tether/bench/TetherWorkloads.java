package dev.tether.bench;

import dev.tether.ffi.Tether;
import dev.tether.ffi.TetherCallback;
import dev.tether.ffi.TetherFunction;
import dev.tether.ffi.TetherInstance;
import dev.tether.ffi.TetherType;

/** Workloads through tether's public Java API (dev.tether.ffi) and the testing namespace. */
public final class TetherWorkloads implements Workloads {
    private final TetherFunction echo = Tether.getGlobalFunc("testing.echo");
    private final TetherFunction add3 = Tether.getGlobalFunc("testing.add3");
    private final TetherFunction call = Tether.getGlobalFunc("testing.call");
    private final TetherType pair = Tether.type("testing.Pair");

    @Override
    public Object sample() {
        return pair.construct(null, null);
    }

    @Override
    public Object echo(Object x) {
        return echo.call(x);
    }

    @Override
    public Object makePair(Object first, Object second) {
        return pair.construct(first, second);
    }

    @Override
    public Object first(Object p) {
        return ((TetherInstance) p).get("first");
    }

    @Override
    public long add3(long a, long b, long c) {
        return add3.callLong(a, b, c);
    }

    @Override
    public Object callback(Object result) {
        TetherCallback cb = args -> result;
        return cb;
    }

    @Override
    public Object call(Object cb) {
        return call.call(cb);
    }
}
