package dev.tether.ffi;

import java.util.List;

/**
 * Generated bindings (tether-bindgen's Java classes; see docs/bindings.md), found through
 * {@link java.util.ServiceLoader}: a bindings jar names its implementation in
 * {@code META-INF/services/dev.tether.ffi.TetherBindings} (and in its module-info's
 * {@code provides}). {@link Tether#loadModule} offers every plugin it loads to the bindings
 * that define classes for one of its types, so a plugin loaded through the reflective API
 * first still gives instances of its generated classes.
 */
public interface TetherBindings {
    /** The type keys the bindings define classes for. */
    List<String> typeKeys();

    /**
     * Bind the generated classes to {@code module}, a loaded plugin that registered one of
     * {@link #typeKeys()}: check that it is the plugin the bindings were generated from
     * ({@link Tether#checkBindings}) and register the classes ({@link Tether#registerClass}).
     * Binding again does nothing.
     *
     * @throws TetherValueError if the module is not the plugin the bindings were generated from
     *     (the frontend then leaves its objects to {@link TetherInstance})
     */
    void bind(TetherModule module);
}
