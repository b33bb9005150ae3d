package dev.tether.ffi;

import java.util.ArrayList;
import java.util.List;

/** T40: leave live tied objects, stashed objects and foreign-thread frees behind, then exit. */
public final class ShutdownMain {
    private ShutdownMain() {}

    public static void main(String[] args) {
        TetherFunction makePair = Tether.getGlobalFunc("testing.make_pair");
        List<Object> keep = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            keep.add(makePair.call((long) i, null));
        }
        Tether.getGlobalFunc("testing.stash").call("shutdown-pair", keep.get(0));
        Tether.getGlobalFunc("testing.stash").call("shutdown-callback", (TetherCallback) a -> a.length);
        Tether.getGlobalFunc("testing.drop_in_thread").call(keep.get(1));
        Tether.getGlobalFunc("testing.call_in_thread").call(Tether.getGlobalFunc("testing.stash_clear"));
        Tether.getGlobalFunc("testing.stash").call("shutdown-late", keep.get(2));
        System.out.println("shutdown-main: done with " + keep.size() + " live wrappers");
    }
}
