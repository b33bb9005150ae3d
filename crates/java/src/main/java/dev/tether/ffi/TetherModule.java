package dev.tether.ffi;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.List;

/** A loaded plugin ({@code tether.Module}), from {@link Tether#loadModule(String)}. */
public final class TetherModule implements TetherObject, Tied {
    /** The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}. */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    final long word;
    /** Its Cleaner's registration ({@link NativeRef#register}); {@code close()} runs it. */
    final Cleaner.Cleanable cleanable;

    TetherModule(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.cleanable = NativeRef.register(this, handle, word);
    }

    /** The live handle; throws if this wrapper was closed. */
    long handle() {
        return NativeRef.handle(handle, word);
    }

    /** An exported function; {@link TetherKeyError} if there is none by that name. */
    public TetherFunction function(String name) {
        try {
            return (TetherFunction) Native.moduleFunction(handle(), name);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Exported function names, in export order. */
    public List<String> functionNames() {
        try {
            return List.of(Native.moduleFunctionNames(handle()));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Keys of the types the module registered. */
    public List<String> typeKeys() {
        try {
            return List.of(Native.moduleTypeKeys(handle()));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Construct an object of one of the module's types (or any registered type); a short name
     * ({@code "Node"}) means the module's type of that name.
     */
    public Object construct(String typeKey, Object... args) {
        return Tether.constructAmong(this::typeKeys, typeKey, args);
    }

    void checkBindings(String manifest) {
        try {
            Native.checkBindings(handle(), manifest);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return isClosed() ? "<closed tether.Module>" : "<tether.Module " + functionNames() + ">";
    }
}
