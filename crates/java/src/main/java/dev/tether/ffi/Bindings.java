package dev.tether.ffi;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.ServiceLoader;

/** The generated bindings on the class path or module path, offered every module {@link Tether#loadModule} loads. */
final class Bindings {
    private Bindings() {}

    /** Found once, on the first load (null before). */
    private static volatile List<TetherBindings> found;

    private static List<TetherBindings> found() {
        List<TetherBindings> all = found;
        if (all == null) {
            synchronized (Bindings.class) {
                all = found;
                if (all == null) {
                    List<TetherBindings> list = new ArrayList<>();
                    // The context class loader, as ServiceLoader.load(Class) uses: what the
                    // application sees (e.g. Maven's exec:java loader), not only tether-ffi's.
                    ServiceLoader.load(TetherBindings.class).forEach(list::add);
                    found = all = List.copyOf(list);
                }
            }
        }
        return all;
    }

    /**
     * Offer {@code module} to the bindings of its types. No lock is held while they bind: a
     * bindings class loading its plugin holds its own lock while it calls
     * {@link Tether#loadModule}, which comes back here on the same thread.
     */
    static void offer(TetherModule module) {
        List<TetherBindings> all = found();
        if (all.isEmpty()) {
            return;
        }
        List<String> keys = module.typeKeys();
        for (TetherBindings b : all) {
            if (!Collections.disjoint(b.typeKeys(), keys)) {
                try {
                    b.bind(module);
                } catch (TetherValueError stale) {
                    // Generated from another version of the plugin: its objects stay
                    // TetherInstance, and the bindings' own loader reports the difference.
                }
            }
        }
    }
}
